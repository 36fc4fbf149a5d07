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
  // A refused form keeps what the reader typed. Each form's fields are
  // kept for this tab when it is sent (never hidden fields, passwords or
  // URLs: a channel's URL is a secret); the page that refuses it, whose
  // flash names the form's action (data-form), puts them back, repeats
  // the problem at the top of the form and moves the focus to its first
  // field. Any other page load forgets what was kept.
  var KEEP = 'followfeed:form:';
  var kept = function (el) {
    return el.name && ['hidden', 'password', 'url', 'submit', 'button', 'file'].indexOf(el.type) < 0;
  };
  document.querySelectorAll('form[method="post"]').forEach(function (f) {
    f.addEventListener('submit', function () {
      var fields = [];
      Array.prototype.forEach.call(f.elements, function (el) {
        if (kept(el)) {
          fields.push({ name: el.name, value: el.value, checked: el.checked });
        }
      });
      try { sessionStorage.setItem(KEEP + f.getAttribute('action'), JSON.stringify(fields)); } catch (e) { /* storage off: nothing kept */ }
    });
  });
  var refused = document.querySelector('p.flash[data-form]');
  var action = refused ? refused.getAttribute('data-form') : '';
  var saved = null;
  try {
    saved = action ? sessionStorage.getItem(KEEP + action) : null;
    for (var k = sessionStorage.length - 1; k >= 0; k--) {
      var key = sessionStorage.key(k);
      if (key && key.indexOf(KEEP) === 0) { sessionStorage.removeItem(key); }
    }
  } catch (e) { saved = null; }
  var form = null;
  document.querySelectorAll('form[method="post"]').forEach(function (f) {
    if (action && f.getAttribute('action') === action && !form) { form = f; }
  });
  if (form) {
    if (saved) {
      var fields = [];
      try { fields = JSON.parse(saved) || []; } catch (e) { fields = []; }
      var els = Array.prototype.filter.call(form.elements, kept);
      fields.forEach(function (s) {
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
    }
    var note = document.createElement('p');
    note.className = 'form-error';
    note.id = 'form-error';
    note.textContent = refused.textContent;
    form.insertBefore(note, form.firstChild);
    // The first field the reader types in (a text, date or number), else
    // the first field shown.
    var shown = Array.prototype.filter.call(form.elements, function (el) {
      return kept(el) && !el.disabled && el.offsetParent !== null;
    });
    var first = shown.filter(function (el) {
      return el.tagName === 'TEXTAREA' || ['text', 'search', 'email', 'date', 'number'].indexOf(el.type) >= 0;
    })[0] || shown[0];
    if (first) {
      first.setAttribute('aria-invalid', 'true');
      first.setAttribute('aria-describedby', 'form-error');
      first.focus();
    }
  }
})();
