package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ServerInfo is the welcome answer of GET /.
type ServerInfo struct {
	Version string `json:"version"`
	GitSHA  string `json:"git_sha,omitempty"`
	// UUID is the server's [couchdb] uuid, the same on every node of a cluster.
	UUID   string `json:"uuid,omitempty"`
	Vendor struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	} `json:"vendor"`
	Features []string `json:"features,omitempty"`
}

// Server answers GET /.
func (c *Client) Server(ctx context.Context) (ServerInfo, error) {
	var info ServerInfo
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/", accept: []int{http.StatusOK}}, &info)
	return info, err
}

// Versions is the answer of GET /_node/_local/_versions (CouchDB 3.3 and later): what the
// node runs view code and collation with.
type Versions struct {
	JavaScriptEngine struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"javascript_engine"`
	Erlang struct {
		Version string `json:"version"`
	} `json:"erlang"`
	CollationDriver struct {
		Name           string `json:"name"`
		LibraryVersion string `json:"library_version"`
	} `json:"collation_driver"`
}

// Versions answers GET /_node/_local/_versions.
func (c *Client) Versions(ctx context.Context) (Versions, error) {
	var v Versions
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/_node/_local/_versions", accept: []int{http.StatusOK}}, &v)
	return v, err
}

// Membership is the answer of GET /_membership.
type Membership struct {
	AllNodes     []string `json:"all_nodes"`
	ClusterNodes []string `json:"cluster_nodes"`
}

// Membership answers GET /_membership.
func (c *Client) Membership(ctx context.Context) (Membership, error) {
	var m Membership
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/_membership", accept: []int{http.StatusOK}}, &m)
	return m, err
}

// Task is one entry of /_active_tasks. Only the fields the runner reads are typed; an
// indexer task has all of them, a view_compaction task has no IndexerPID.
type Task struct {
	Node           string `json:"node"`
	PID            string `json:"pid"`
	Type           string `json:"type"`
	Database       string `json:"database"`
	DesignDocument string `json:"design_document"`
	IndexerPID     string `json:"indexer_pid"`
	ChangesDone    int64  `json:"changes_done"`
	TotalChanges   int64  `json:"total_changes"`
	Progress       int64  `json:"progress"`
	StartedOn      int64  `json:"started_on"`
	UpdatedOn      int64  `json:"updated_on"`
}

// ActiveTasks answers GET /_active_tasks: the tasks of every node of the cluster.
func (c *Client) ActiveTasks(ctx context.Context) ([]Task, error) {
	var tasks []Task
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/_active_tasks", accept: []int{http.StatusOK}}, &tasks)
	return tasks, err
}

// ParseTasks decodes an /_active_tasks body (for recorded series).
func ParseTasks(body []byte) ([]Task, error) {
	var tasks []Task
	err := json.Unmarshal(body, &tasks)
	return tasks, err
}

// nodePath is /_node/{node}; "_local" names the node that answers.
func nodePath(node string) string { return "/_node/" + escape(node) }

// Counter reads one counter of a node's statistics, e.g. ("couchdb", "mrview", "map_doc").
func (c *Client) Counter(ctx context.Context, node string, path ...string) (int64, error) {
	segments := make([]string, len(path))
	for i, p := range path {
		segments[i] = escape(p)
	}
	var leaf struct {
		Value *json.Number `json:"value"`
	}
	req := request{method: http.MethodGet, path: nodePath(node) + "/_stats/" + strings.Join(segments, "/"), accept: []int{http.StatusOK}}
	if _, err := c.call(ctx, req, &leaf); err != nil {
		return 0, err
	}
	if leaf.Value == nil {
		return 0, fmt.Errorf("%s: not a counter", req.path)
	}
	return leaf.Value.Int64()
}

// Uptime is how long a node's CouchDB has been running (GET /_node/{node}/_system
// "uptime", whole seconds): a node that restarted reports less than it did before.
func (c *Client) Uptime(ctx context.Context, node string) (time.Duration, error) {
	var system struct {
		Uptime *int64 `json:"uptime"`
	}
	req := request{method: http.MethodGet, path: nodePath(node) + "/_system", accept: []int{http.StatusOK}}
	if _, err := c.call(ctx, req, &system); err != nil {
		return 0, err
	}
	if system.Uptime == nil {
		return 0, fmt.Errorf("%s: no uptime in the answer", req.path)
	}
	return time.Duration(*system.Uptime) * time.Second, nil
}

// System is what GET /_node/{node}/_system says about a node's load.
type System struct {
	RunQueue      int `json:"run_queue"`
	DirtyRunQueue int `json:"run_queue_dirty_cpu"`
	ProcessCount  int `json:"process_count"`
	// OSProcCount counts the query server processes.
	OSProcCount int `json:"os_proc_count"`
	// Reductions is the Erlang VM's work done since start, a counter.
	Reductions              int64            `json:"reductions"`
	InternalReplicationJobs int              `json:"internal_replication_jobs"`
	Memory                  map[string]int64 `json:"memory"`
}

// MemoryBytes is the VM's memory in use: processes, binaries, ETS tables, code, atoms and
// the rest (the *_used entries are parts of these).
func (s System) MemoryBytes() int64 {
	var total int64
	for _, k := range []string{"processes", "binary", "ets", "code", "atom", "other"} {
		total += s.Memory[k]
	}
	return total
}

// System reads a node's load.
func (c *Client) System(ctx context.Context, node string) (System, error) {
	var s System
	_, err := c.call(ctx, request{method: http.MethodGet, path: nodePath(node) + "/_system", accept: []int{http.StatusOK}}, &s)
	return s, err
}

func configPath(node, section, key string) string {
	return nodePath(node) + "/_config/" + escape(section) + "/" + escape(key)
}

// Config reads one configuration value of a node; set is false when the key is not set in
// any ini file (CouchDB answers 404 and its compiled default applies).
func (c *Client) Config(ctx context.Context, node, section, key string) (value string, set bool, err error) {
	req := request{method: http.MethodGet, path: configPath(node, section, key), accept: []int{http.StatusOK}}
	_, err = c.call(ctx, req, &value)
	if isUnsetConfig(err) {
		return "", false, nil
	}
	return value, err == nil, err
}

// notPersisted asks CouchDB to change a configuration value in the node's memory only.
// Persisted, the change is written into the node's last ini file, which CouchDB rewrites
// in place (truncate, then write): a node stopped, or a file replaced by another program,
// during that write leaves an ini file cut short, and the node then fails its next start
// (without its [admins], "No Admin Account Found"). A change in memory only is also gone
// when the node restarts, so a run that never restores leaves nothing behind.
var notPersisted = http.Header{"X-Couch-Persist": {"false"}}

// SetConfig sets one configuration value of a node until the node restarts; its ini files
// are not written (notPersisted).
func (c *Client) SetConfig(ctx context.Context, node, section, key, value string) error {
	body, _ := json.Marshal(value)
	req := request{method: http.MethodPut, path: configPath(node, section, key), body: body, accept: []int{http.StatusOK}, header: notPersisted}
	_, err := c.call(ctx, req, nil)
	return err
}

// DeleteConfig removes one configuration value of a node until the node restarts (as
// SetConfig, its ini files are not written); a value that is not set is not an error.
func (c *Client) DeleteConfig(ctx context.Context, node, section, key string) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: configPath(node, section, key), accept: []int{http.StatusOK}, header: notPersisted}, nil)
	if isUnsetConfig(err) {
		return nil
	}
	return err
}

// isUnsetConfig tells CouchDB's "this key is not set" (404 unknown_config_value) from other
// 404s, such as a server without the config API.
func isUnsetConfig(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Status == http.StatusNotFound && ce.Reason == "unknown_config_value"
}

// query is a helper for building query strings from key/value pairs.
func query(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// ClusterSetupState answers GET /_cluster_setup: "cluster_finished" once a cluster is
// formed, "single_node_enabled" for a node set up alone, else another state.
func (c *Client) ClusterSetupState(ctx context.Context) (string, error) {
	var answer struct {
		State string `json:"state"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/_cluster_setup", accept: []int{http.StatusOK}}, &answer)
	return answer.State, err
}

// FinishCluster sends {"action":"finish_cluster"}: CouchDB creates the system databases
// of a cluster whose nodes have joined.
func (c *Client) FinishCluster(ctx context.Context) error {
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/_cluster_setup", body: []byte(`{"action":"finish_cluster"}`),
		accept: []int{http.StatusOK, http.StatusCreated}}, nil)
	return err
}
