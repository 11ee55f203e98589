// couchbench read load for k6. The operator mounts this file from a ConfigMap and passes
// everything else through the environment: COUCHBENCH_CONFIG (JSON: url, db, documents,
// scenario, k6 options, the view design document) and COUCHDB_USER / COUCHDB_PASSWORD (from
// the benchmark's Secret; never written into a script or a ConfigMap).
//
// Every request of the measured load carries the tag couchbench=load, so that setup()
// (installing and building the views) stays out of the numbers; the summary written by
// handleSummary reads the tagged sub-metrics.
import http from 'k6/http';
import encoding from 'k6/encoding';
import exec from 'k6/execution';

const cfg = JSON.parse(__ENV.COUCHBENCH_CONFIG);
export const options = cfg.options;

const base = cfg.url.replace(/\/+$/, '') + '/' + encodeURIComponent(cfg.db);
const headers = {
  Accept: 'application/json',
  Authorization: 'Basic ' + encoding.b64encode(`${__ENV.COUCHDB_USER || ''}:${__ENV.COUCHDB_PASSWORD || ''}`),
};
const load = { headers: headers, tags: { couchbench: 'load' } };
const viewPath = `${base}/_design/${cfg.designDoc ? cfg.designDoc._id.replace('_design/', '') : ''}/_view/`;

// Document ids are the dataset's zero-padded indexes: every id below cfg.documents exists.
function docId(i) {
  return String(i).padStart(10, '0');
}
function randomIndex(limit) {
  return Math.floor(Math.random() * limit);
}
function jsonKey(k) {
  return encodeURIComponent(JSON.stringify(k));
}

// setup installs the views a view scenario reads (a design document that already exists is
// fine) and builds them, untimed, as seed 002 pre-warms its views. A cluster can answer a
// long build with 500 timeout while the build goes on: ask again. It returns its own
// duration: k6 counts setup in the test run's time, and the rate must not.
export function setup() {
  const started = Date.now();
  if (!cfg.designDoc) {
    return { setupMs: Date.now() - started };
  }
  const put = http.put(`${base}/${encodeURIComponent(cfg.designDoc._id).replace('%2F', '/')}`, JSON.stringify(cfg.designDoc),
    { headers: Object.assign({ 'Content-Type': 'application/json' }, headers), timeout: '60s' });
  if (put.status !== 201 && put.status !== 202 && put.status !== 409) {
    exec.test.abort(`installing ${cfg.designDoc._id}: HTTP ${put.status} ${put.body}`);
  }
  for (const view of ['emit_doc', 'emit_null']) {
    for (;;) {
      const r = http.get(`${viewPath}${view}?limit=0`, { headers: headers, timeout: '3600s', responseType: 'text' });
      if (r.status === 200) {
        break;
      }
      if (r.status !== 500 || !r.body || r.body.indexOf('"timeout"') < 0) {
        exec.test.abort(`building view ${view}: HTTP ${r.status} ${r.body}`);
      }
    }
  }
  return { setupMs: Date.now() - started };
}

const rangeLength = 10;

const scenarios = {
  getDocument() {
    http.get(`${base}/${docId(randomIndex(cfg.documents))}`, load);
  },
  viewByKey() {
    http.get(`${viewPath}emit_doc?key=${jsonKey(docId(randomIndex(cfg.documents)))}`, load);
  },
  viewRange() {
    const i = randomIndex(Math.max(cfg.documents - rangeLength, 1));
    http.get(`${viewPath}emit_doc?startkey=${jsonKey(docId(i))}&endkey=${jsonKey(docId(i + rangeLength - 1))}`, load);
  },
  viewRangeIncludeDocs() {
    const i = randomIndex(Math.max(cfg.documents - rangeLength, 1));
    http.get(`${viewPath}emit_null?include_docs=true&startkey=${jsonKey(docId(i))}&endkey=${jsonKey(docId(i + rangeLength - 1))}`, load);
  },
  // mixed: nine reads of existing documents to one write of a new one.
  mixed() {
    if (Math.random() < 0.9) {
      http.get(`${base}/${docId(randomIndex(cfg.documents))}`, load);
      return;
    }
    const doc = { _id: `k6-${exec.vu.idInTest}-${exec.vu.iterationInInstance}-${Date.now()}`, metadata: { docType: 'score' }, score: 1 };
    http.post(base, JSON.stringify(doc), { headers: Object.assign({ 'Content-Type': 'application/json' }, headers), tags: load.tags });
  },
};

export default function () {
  scenarios[cfg.scenario]();
}

// handleSummary writes the compact summary (at most a few hundred bytes) where the operator
// reads it, the container's termination message, and the full summary to stdout.
export function handleSummary(data) {
  const m = (name) => (data.metrics[name] ? data.metrics[name].values : {});
  const duration = m('http_req_duration{couchbench:load}');
  const reqs = m('http_reqs{couchbench:load}');
  const failed = m('http_req_failed{couchbench:load}');
  const thresholds = {};
  for (const [metric, def] of Object.entries(data.metrics)) {
    for (const [expr, result] of Object.entries(def.thresholds || {})) {
      if (cfg.userThresholds.includes(`${metric}|${expr}`)) {
        thresholds[`${metric}: ${expr}`] = result.ok;
      }
    }
  }
  const summary = {
    v: 1,
    segment: __ENV.COUCHBENCH_SEGMENT || '0:1',
    requests: reqs.count || 0,
    durationMs: data.state.testRunDurationMs - ((data.setup_data && data.setup_data.setupMs) || 0),
    setupMs: (data.setup_data && data.setup_data.setupMs) || 0,
    failedRate: failed.rate || 0,
    failed: failed.passes || 0,
    dataReceived: m('data_received').count || 0,
    ms: { avg: duration.avg, min: duration.min, p50: duration['p(50)'], p90: duration['p(90)'], p95: duration['p(95)'], p99: duration['p(99)'], max: duration.max },
    thresholds: thresholds,
  };
  return {
    [__ENV.COUCHBENCH_SUMMARY || '/dev/termination-log']: JSON.stringify(summary),
    stdout: JSON.stringify(data) + '\n',
  };
}
