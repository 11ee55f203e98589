// couchbench read load for k6. The operator mounts this file from a ConfigMap and passes
// everything else through the environment: COUCHBENCH_CONFIG (JSON: url, db, documents,
// scenario, k6 options, the view design document) and COUCHDB_USER / COUCHDB_PASSWORD (from
// the benchmark's Secret; never written into a script or a ConfigMap).
//
// Every request of the measured load carries the tag couchbench=load, so that setup()
// (installing and building the views) stays out of the numbers: the results are the tagged
// sub-metrics of the summary handleSummary hands over.
import http from 'k6/http';
import crypto from 'k6/crypto';
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
  // getSameDocument: seed 001's siege read one URL over and over.
  getSameDocument() {
    http.get(`${base}/${docId(0)}`, load);
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

// handleSummary hands k6's whole end-of-test summary to the operator as every couchbench Job
// hands its results (internal/results/handoff.go): base64 lines between two frame lines on
// stdout, the container's log, where no size limit cuts it; and in the termination message
// its size and SHA-256, which the operator checks the log's copy against. The operator turns
// the summary into the arm's results document; nothing is computed here.
export function handleSummary(data) {
  const json = JSON.stringify(data);
  const b64 = encoding.b64encode(json);
  let frame = '\n-----BEGIN COUCHBENCH K6-SUMMARY-----\n';
  for (let i = 0; i < b64.length; i += 76) {
    frame += b64.slice(i, i + 76) + '\n';
  }
  frame += '-----END COUCHBENCH K6-SUMMARY-----\n';
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  const handoff = { v: 2, payload: 'k6-summary', bytes: (b64.length / 4) * 3 - padding, sha256: crypto.sha256(json, 'hex') };
  return {
    stdout: frame,
    [__ENV.COUCHBENCH_HANDOFF || '/dev/termination-log']: JSON.stringify(handoff),
  };
}
