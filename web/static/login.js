// The "Sign in as …?" page: the host's token leaves the address bar and
// this page's history entry at once (the form posts it), so it is not in
// the browser's history, a bookmark or a screenshot of the address bar.
(function () {
  'use strict';
  if (window.history && history.replaceState && /[?&]token=/.test(location.search)) {
    history.replaceState(null, '', location.pathname);
  }
})();
