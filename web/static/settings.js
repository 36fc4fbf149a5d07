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
})();
