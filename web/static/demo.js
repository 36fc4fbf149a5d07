// The embed demo's token hook: the server put a development token in a
// <meta> tag (no inline script: the page runs under a strict CSP).
(function () {
  var meta = document.querySelector('meta[name="followfeed-demo-token"]');
  var token = meta ? meta.getAttribute('content') : null;
  window.followfeedToken = function () { return token || null; };
})();
