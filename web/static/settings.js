// Progressive enhancement of the settings page; every action works without it.
(function () {
  'use strict';
  // Copy buttons next to the feed URLs.
  if (navigator.clipboard) {
    document.querySelectorAll('button.copy').forEach(function (b) {
      b.hidden = false;
      b.addEventListener('click', function () {
        var input = document.getElementById(b.getAttribute('data-copy'));
        navigator.clipboard.writeText(input.value).then(function () {
          b.textContent = 'Copied';
          setTimeout(function () { b.textContent = 'Copy'; }, 1500);
        }, function () { input.select(); });
      });
    });
  }
  // Preselect the browser's time zone when the user never chose one.
  var tz = document.getElementById('timezone');
  if (tz && tz.getAttribute('data-browser-default') === 'true' && window.Intl) {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    for (var i = 0; i < tz.options.length; i++) {
      if (tz.options[i].value === zone) { tz.selectedIndex = i; break; }
    }
  }
  // A pause's end is after its start: the "Back on" picker offers no day
  // before the one after "From" (the server refuses one anyway).
  var from = document.getElementById('pause-from');
  var until = document.getElementById('pause-until');
  if (from && until) {
    var floor = until.min;
    var follow = function () {
      var d = from.value && new Date(from.value + 'T00:00:00Z');
      if (!d || isNaN(d)) { until.min = floor; return; }
      d.setUTCDate(d.getUTCDate() + 1);
      var next = d.toISOString().slice(0, 10);
      until.min = next > floor ? next : floor;
    };
    from.addEventListener('change', follow);
    follow();
  }
  // The add-channel form shows only the fields of the chosen type (without
  // JavaScript both groups show, and the server reads the chosen type's).
  var type = document.getElementById('channel-type');
  if (type) {
    var groups = document.querySelectorAll('#channel-add fieldset[data-types]');
    var sync = function () {
      groups.forEach(function (g) {
        g.hidden = g.getAttribute('data-types').split(' ').indexOf(type.value) < 0;
      });
    };
    type.addEventListener('change', sync);
    sync();
  }
  // A channel's follow choice: picking "Chosen follows" opens its list,
  // checking a follow in the list picks "Chosen follows" (without
  // JavaScript the user does both).
  document.querySelectorAll('fieldset.follow-choice').forEach(function (f) {
    var chosen = f.querySelector('input[name="follows_scope"][value="chosen"]');
    var list = f.querySelector('details.follow-pick');
    if (!chosen || !list) { return; }
    chosen.addEventListener('change', function () { if (chosen.checked) { list.open = true; } });
    f.querySelectorAll('input[name="follow"]').forEach(function (box) {
      box.addEventListener('change', function () { if (box.checked) { chosen.checked = true; } });
    });
  });
  // A refused form keeps what the reader typed. The form sent is kept for
  // this tab: its action and what tells it from the other forms of that
  // action (its hidden fields but the CSRF token and a manage link's
  // token), and its fields (never hidden fields, passwords or URLs; a
  // form marked data-nokeep, a channel's, not at all: its URL is a
  // secret, and the server keeps those forms' values itself). The page
  // that refuses it, whose flash names its action (data-form) and field
  // (data-field), puts the fields back into that very form (none when it
  // is not on the page any more, as a follow unfollowed in another tab),
  // repeats the problem above the field named (else at the form's top)
  // and moves the focus to that field, else its first field to type in.
  // Any page load forgets it.
  var KEEP = 'followfeed:refusable';
  var kept = function (el) {
    return el.name && ['hidden', 'password', 'url', 'submit', 'button', 'file', 'reset'].indexOf(el.type) < 0;
  };
  var identity = function (f) {
    var parts = [f.getAttribute('action')];
    Array.prototype.forEach.call(f.elements, function (el) {
      if (el.type === 'hidden' && el.name && el.name !== 'csrf' && el.name !== 'token') { parts.push(el.name + '=' + el.value); }
    });
    return JSON.stringify(parts);
  };
  document.querySelectorAll('form[method="post"]:not([data-nokeep])').forEach(function (f) {
    f.addEventListener('submit', function () {
      var fields = [];
      Array.prototype.forEach.call(f.elements, function (el) {
        if (kept(el)) { fields.push({ name: el.name, value: el.value, checked: el.checked }); }
      });
      try {
        sessionStorage.setItem(KEEP, JSON.stringify({ id: identity(f), fields: fields }));
      } catch (e) { /* storage off: nothing kept */ }
    });
  });
  var refused = document.querySelector('p.flash[data-form]');
  var saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(KEEP) || 'null');
    sessionStorage.removeItem(KEEP);
  } catch (e) { saved = null; }
  var form = null;
  if (refused && saved && saved.id) {
    var action = refused.getAttribute('data-form');
    var matches = Array.prototype.filter.call(document.querySelectorAll('form[method="post"]:not([data-nokeep])'), function (f) {
      return f.getAttribute('action') === action && identity(f) === saved.id;
    });
    if (matches.length === 1) { form = matches[0]; }
  }
  if (form) {
    var els = Array.prototype.filter.call(form.elements, kept);
    (saved.fields || []).forEach(function (s) {
      for (var j = 0; j < els.length; j++) {
        var el = els[j];
        if (el.name !== s.name) { continue; }
        if (el.type === 'checkbox' || el.type === 'radio') {
          if (el.value === s.value) { el.checked = s.checked; els.splice(j, 1); break; }
          continue;
        }
        el.value = s.value;
        els.splice(j, 1);
        break;
      }
    });
    // A form in a collapsed list (the snoozes) opens, to be seen.
    for (var d = form.closest('details'); d; d = d.parentElement && d.parentElement.closest('details')) { d.open = true; }
    var shown = Array.prototype.filter.call(form.elements, function (el) {
      return kept(el) && !el.disabled && el.offsetParent !== null;
    });
    // The field the problem names ("digest.max_papers": max_papers), else
    // the first one to type in, else the first shown.
    var named = (refused.getAttribute('data-field') || '').split('.').pop();
    var field = shown.filter(function (el) { return named && el.name === named; })[0];
    var first = field ||
      shown.filter(function (el) {
        return el.tagName === 'TEXTAREA' || ['text', 'search', 'email', 'date', 'number'].indexOf(el.type) >= 0;
      })[0] || shown[0];
    // The problem stands above the field it names (its label), where the
    // reader looks, not at the top of a long form; else at the top.
    var note = document.createElement('p');
    note.className = 'form-error';
    note.id = 'form-error';
    note.textContent = refused.textContent;
    var anchor = field && ((field.id && form.querySelector('label[for="' + field.id + '"]')) || field.closest('label') || field);
    if (anchor && form.contains(anchor)) {
      anchor.parentNode.insertBefore(note, anchor);
    } else {
      form.insertBefore(note, form.firstChild);
    }
    if (first) {
      first.setAttribute('aria-invalid', 'true');
      first.setAttribute('aria-describedby', ('form-error ' + (first.getAttribute('aria-describedby') || '')).trim());
      first.focus();
    }
  }
  // A form that comes back to its own section of a long page (the
  // feedback list's Undo: #feedback; the mutes: #mutes) has its outcome
  // shown there, under the section's heading, where the reader is, not
  // at the top of the page scrolled out of view.
  var outcome = document.querySelector('p.flash:not([data-form])');
  var section = location.hash && document.getElementById(location.hash.slice(1));
  if (outcome && section && section.tagName === 'SECTION') {
    var heading = section.querySelector('h2');
    if (heading) { heading.insertAdjacentElement('afterend', outcome); }
  }
})();
