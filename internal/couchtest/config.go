package couchtest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// Node endpoints: /_node/{node}/... with "_local" for the node that answers, which here is
// always the first node. Configuration is kept per node, as CouchDB keeps it; the recorded
// semantics (03_config_*, 05b_config_*): an unset key is a 404 unknown_config_value, PUT
// answers the previous value as a JSON string ("" if unset), DELETE answers the removed one.

var errNoConfig = errorReply(http.StatusNotFound, "not_found", "unknown_config_value")

// initialConfig is the [couchdb] section recorded on the single node
// (01_get_config_couchdb); a cluster's nodes have no single_node key.
func initialConfig(nodes int) map[string]map[string]string {
	var recorded map[string]string
	if err := json.Unmarshal(fixtureBody("01_get_config_couchdb"), &recorded); err != nil {
		panic("couchtest: testdata/01_get_config_couchdb.json: " + err.Error())
	}
	if nodes > 1 {
		delete(recorded, "single_node")
	}
	return map[string]map[string]string{"couchdb": recorded}
}

// nodeName resolves "_local" to the first node.
func (s *Server) nodeName(node string) string {
	if node == "_local" {
		return s.cfg.nodes[0]
	}
	return node
}

func (s *Server) routeNode(r *http.Request, method, node string, rest []string) reply {
	node = s.nodeName(node)
	if _, ok := s.stats[node]; !ok {
		return errDocMissing
	}
	switch {
	case len(rest) == 0:
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return jsonReply(http.StatusOK, struct {
			Name string `json:"name"`
		}{node}) // 06_cluster_get_node_local_name
	case rest[0] == "_stats":
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.mrviewStats(node, rest[1:])
	case rest[0] == "_config" && len(rest) == 2:
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.configSection(node, rest[1])
	case rest[0] == "_config" && len(rest) == 3:
		return s.configKey(r, method, node, rest[1], rest[2])
	case rest[0] == "_dbs" && len(rest) == 2:
		if method != http.MethodGet {
			return methodNotAllowed("GET")
		}
		return s.shardMap(rest[1])
	case strings.HasPrefix(rest[0], "shards/"):
		return s.copyRequest(r, method, node, rest[0], rest[1:])
	}
	return errDocMissing
}

func (s *Server) configSection(node, section string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	values := maps.Clone(s.conf[node][section])
	if values == nil {
		values = map[string]string{}
	}
	return jsonReply(http.StatusOK, values) // keys sorted, as recorded
}

func (s *Server) configKey(r *http.Request, method, node, section, key string) reply {
	var value string
	if method == http.MethodPut {
		body, err := io.ReadAll(r.Body)
		if err != nil || json.Unmarshal(body, &value) != nil {
			// Not recorded; couchtest's own wording.
			return errorReply(http.StatusBadRequest, "bad_request", "the config value must be a JSON string")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	conf := s.conf[node]
	old, set := conf[section][key]
	switch method {
	case http.MethodGet:
		if !set {
			return errNoConfig
		}
		return jsonReply(http.StatusOK, old)
	case http.MethodPut:
		if conf[section] == nil {
			conf[section] = map[string]string{}
		}
		conf[section][key] = value
		return jsonReply(http.StatusOK, old)
	case http.MethodDelete:
		if !set {
			return errNoConfig
		}
		delete(conf[section], key)
		return jsonReply(http.StatusOK, old)
	}
	return methodNotAllowed("DELETE,GET,PUT")
}

// Config is the current value of a configuration key on node ("_local": the first node).
func (s *Server) Config(node, section, key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.conf[s.nodeName(node)][section][key]
	return v, ok
}

// maxDocumentSize is [couchdb] max_document_size on the node that answers (the first), or
// the compiled-in default (WithMaxDocumentSize) while the key is unset.
func (s *Server) maxDocumentSize() int {
	if v, ok := s.conf[s.cfg.nodes[0]]["couchdb"]["max_document_size"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return s.cfg.maxDocumentSize
}

// clusterSetup is /_cluster_setup. Only GET's "cluster_finished" was recorded
// (06_cluster_get_cluster_setup); the rest follows CouchDB 3.4.3's setup_httpd and its
// documentation: GET answers "single_node_enabled" while [couchdb] single_node is "true"
// (as on the recorded single node), otherwise "cluster_enabled" until a POST
// {"action":"finish_cluster"} and "cluster_finished" after it. POST answers 201
// {"ok":true}, or 400 "Cluster is already finished" for a second finish. The other actions
// (enable_cluster, add_node, ...) set up real nodes and are not offered here.
func (s *Server) clusterSetup(r *http.Request, method string) reply {
	switch method {
	case http.MethodGet:
		s.mu.Lock()
		defer s.mu.Unlock()
		state := "cluster_enabled"
		switch {
		case s.conf[s.cfg.nodes[0]]["couchdb"]["single_node"] == jsonTrue:
			state = "single_node_enabled"
		case s.finished:
			state = "cluster_finished"
		}
		return jsonReply(http.StatusOK, struct {
			State string `json:"state"`
		}{state})
	case http.MethodPost:
		if !isJSONRequest(r) {
			return errBadContentType
		}
		body, err := io.ReadAll(r.Body)
		if err != nil || !json.Valid(body) {
			return errBadJSON
		}
		setup, err := parseObject(body)
		if err != nil {
			return errorReply(http.StatusBadRequest, "bad_request", "Request body must be a JSON object")
		}
		action, _ := setup.str("action")
		if action != "finish_cluster" {
			return errorReply(http.StatusBadRequest, "bad_request", "couchtest supports only the finish_cluster action, not "+strconv.Quote(action))
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.finished {
			return errorReply(http.StatusBadRequest, "bad_request", "Cluster is already finished")
		}
		s.finished = true
		return jsonReply(http.StatusCreated, okBody{true})
	}
	return methodNotAllowed("GET,POST")
}
