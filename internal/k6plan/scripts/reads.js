// couchbench read load for k6. The operator mounts this file from a ConfigMap (couchbench run
// writes it to a temporary file) and passes everything else through the environment: COUCHBENCH_CONFIG (JSON: url, db, documents,
// scenario, k6 options, the view design document) and COUCHDB_USER / COUCHDB_PASSWORD (from
// the benchmark's Secret; never written into a script or a ConfigMap).
//
// Every request of the measured load carries the tag couchbench=load, so that setup()
// (installing and building the views) stays out of the numbers: the results are the tagged
// sub-metrics of the summary handleSummary hands over.
import http from 'k6/http';
import { sleep } from 'k6';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';

const cfg = JSON.parse(__ENV.COUCHBENCH_CONFIG);
export const options = cfg.options;

const base = cfg.url.replace(/\/+$/, '') + '/' + encodeURIComponent(cfg.db);
const headers = {
  Accept: 'application/json',
  Authorization: 'Basic ' + encoding.b64encode(`${__ENV.COUCHDB_USER || ''}:${__ENV.COUCHDB_PASSWORD || ''}`),
};
const load = { headers: headers, tags: { couchbench: 'load' } };

// Every measured request is also counted in a log-scaled latency histogram, one counter per
// bucket, laid out by the operator (internal/latency): several runners' histograms add up
// exactly, which their percentiles do not.
const histogram = cfg.histogram;
const buckets = [];
for (let b = 0; b < histogram.buckets; b++) {
  buckets.push(new Counter(histogram.prefix + b));
}
const logRatio = Math.log(histogram.ratio);
function measured(res) {
  const ms = res.timings.duration;
  const b = ms <= histogram.baseMs ? 0 : Math.min(Math.floor(Math.log(ms / histogram.baseMs) / logRatio), histogram.buckets - 1);
  buckets[b].add(1);
}
function get(url) {
  measured(http.get(url, load));
}
const viewPath = `${base}/_design/${cfg.designDoc ? cfg.designDoc._id.replace('_design/', '') : ''}/_view/`;

// docId is the id of document i as internal/dataset makes it: the zero-padded index, or with
// random ids four MurmurHash3-finalized 32-bit words in hex. Every i below cfg.documents
// exists.
function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
function docId(i) {
  if (!cfg.randomIds) {
    return String(i).padStart(10, '0');
  }
  let w = fmix32((i ^ cfg.idSalt) >>> 0);
  let id = '';
  for (let k = 0; k < 4; k++) {
    if (k > 0) {
      w = fmix32((w + 0x9e3779b9) >>> 0);
    }
    id += w.toString(16).padStart(8, '0');
  }
  return id;
}
function randomIndex(limit) {
  return Math.floor(Math.random() * limit);
}
function jsonKey(k) {
  return encodeURIComponent(JSON.stringify(k));
}

// barrier holds a runner that shares the load with others (COUCHBENCH_BARRIER: every
// runner's local document in the read database, and its own) until all have announced
// themselves, as the seeding runners do (internal/barrier): the measured load starts on every
// runner within a poll interval. A runner that never comes aborts the test after 10 minutes.
function barrier(spec) {
  const json = { headers: Object.assign({ 'Content-Type': 'application/json' }, headers), responseType: 'text' };
  const keys = spec.docs.map((d) => '_local/' + d);
  const own = keys[spec.part];
  const deadline = Date.now() + 10 * 60 * 1000;
  for (;;) {
    const r = http.post(`${base}/_local_docs`, JSON.stringify({ keys: keys }), json);
    if (r.status === 200) {
      const present = JSON.parse(r.body).rows.filter((row) => !row.error).map((row) => row.key);
      if (present.indexOf(own) < 0) {
        http.put(`${base}/${own}`, JSON.stringify({ part: spec.part }), json);
      } else if (present.length === keys.length) {
        return;
      }
    }
    if (Date.now() > deadline) {
      exec.test.abort(`k6 runners did not all reach the start barrier within 10 minutes (HTTP ${r.status}): are their pods running?`);
    }
    sleep(0.05);
  }
}

// teardown marks the end of this runner's load when a meter reads what the server spent on
// it (COUCHBENCH_BARRIER's end, internal/readscpu): the runner arrives at the end barrier
// without waiting, and the meter, waiting there for every runner, then takes its second
// reading. Asked again on a failure, a few times, each bounded: a meter left waiting costs the
// round its reading, never the runner its result. The request is not tagged, so it stays out
// of the load's numbers; k6 counts teardown in the test run's time, so its own time is
// counted (teardownMs) and taken out of the load's.
const teardownMs = new Counter('couchbench_teardown_ms');
export function teardown() {
  const spec = __ENV.COUCHBENCH_BARRIER ? JSON.parse(__ENV.COUCHBENCH_BARRIER) : null;
  if (!spec || !spec.end) {
    return;
  }
  const started = Date.now();
  const json = { headers: Object.assign({ 'Content-Type': 'application/json' }, headers), responseType: 'text', timeout: '5s' };
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = http.put(`${base}/_local/${spec.end[spec.part]}`, JSON.stringify({ part: spec.part }), json);
    // 409: the document is there, written by an earlier attempt whose answer was lost.
    if (r.status === 201 || r.status === 409) {
      break;
    }
    sleep(0.5);
  }
  teardownMs.add(Date.now() - started);
}

// setup installs the views a view scenario reads (a design document that already exists is
// fine) and builds them, untimed, as seed 002 pre-warms its views; then it waits at the start
// barrier. A cluster can answer a long build with 500 timeout while the build goes on: ask
// again. It returns its own duration (k6 counts setup in the test run's time, and the rate
// must not) and when it ended, the load's start by this runner's clock.
export function setup() {
  const started = Date.now();
  buildViews();
  if (__ENV.COUCHBENCH_BARRIER) {
    barrier(JSON.parse(__ENV.COUCHBENCH_BARRIER));
  }
  const ended = Date.now();
  return { setupMs: ended - started, loadStartedAtMs: ended };
}

function buildViews() {
  if (!cfg.designDoc) {
    return;
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
}

const rangeLength = 10;

const scenarios = {
  getDocument() {
    get(`${base}/${docId(randomIndex(cfg.documents))}`);
  },
  // getSameDocument: seed 001's siege read one URL over and over.
  getSameDocument() {
    get(`${base}/${docId(0)}`);
  },
  viewByKey() {
    get(`${viewPath}emit_doc?key=${jsonKey(docId(randomIndex(cfg.documents)))}`);
  },
  // The ranges are the rangeLength keys from a document's id on: consecutive documents with
  // sequential ids, whatever follows in the view's order with random ones.
  viewRange() {
    get(`${viewPath}emit_doc?startkey=${jsonKey(docId(randomIndex(cfg.documents)))}&limit=${rangeLength}`);
  },
  viewRangeIncludeDocs() {
    get(`${viewPath}emit_null?include_docs=true&startkey=${jsonKey(docId(randomIndex(cfg.documents)))}&limit=${rangeLength}`);
  },
  // mixed: nine reads of existing documents to one write of a new one, every virtual user
  // writing on its every tenth iteration: the mix is exact and the same from run to run (a
  // write drawn at random one time in ten left a short test without any, 4% of the time).
  mixed() {
    if (exec.vu.iterationInInstance % 10 !== 9) {
      get(`${base}/${docId(randomIndex(cfg.documents))}`);
      return;
    }
    const doc = { _id: `k6-${exec.vu.idInTest}-${exec.vu.iterationInInstance}-${Date.now()}`, metadata: { docType: 'score' }, score: 1 };
    measured(http.post(base, JSON.stringify(doc), { headers: Object.assign({ 'Content-Type': 'application/json' }, headers), tags: load.tags }));
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
