// The one plot of the dashboard: memory growth and injections per day, drawn with uPlot.
// The data comes from a JSON block the server rendered (numbers and dates only); nothing here
// builds HTML from text.
(function () {
  "use strict";
  var holder = document.getElementById("growth");
  var block = document.getElementById("growth-data");
  if (!holder || !block || typeof uPlot === "undefined") { return; }
  var g = JSON.parse(block.textContent);
  if (!g.t || g.t.length === 0) {
    holder.textContent = "nothing recorded yet";
    return;
  }
  var width = Math.max(320, Math.min(holder.clientWidth || 640, 900));
  var opts = {
    width: width,
    height: 240,
    // The days the data spans, a day either side when that is less than a day: uPlot's own range for one
    // point assumes milliseconds and stretched the axis over years. The plot is drawn once, from this data.
    scales: {
      x: { time: true, range: function () { return beadSpan(g.t); } },
      n: { auto: true },
      inj: { auto: true }
    },
    series: [
      {},
      { label: "fact versions", scale: "n", stroke: "#2f6fb3", width: 2 },
      { label: "raw turns", scale: "n", stroke: "#8a8f98", width: 1 },
      { label: "injections that day", scale: "inj", stroke: "#c2561a", width: 2, points: { show: true } }
    ],
    axes: [
      {},
      { scale: "n", label: "in all" },
      { scale: "inj", side: 1, label: "injected", grid: { show: false } }
    ]
  };
  window.beadGrowth = new uPlot(opts, [g.t, g.versions, g.turns, g.injections], holder);  // the tests read its scales
})();

// The x range for days ``t`` (seconds); global, so that the tests can draw one point with it.
function beadSpan(t) {
  var lo = t[0], hi = t[t.length - 1];
  return hi - lo < 86400 ? [lo - 86400, hi + 86400] : [lo, hi];
}
