package couchtest

import (
	"net/http"
	"strings"
)

// The recorded rules (02_*): wrong credentials are refused everywhere, even on GET /, which
// is public without credentials; without credentials everything else asks for a server admin.
// GET /_up is public too in CouchDB 3.4.3 (chttpd_auth_request lets it through; it is how
// load balancers probe a node). Real CouchDB words a few refusals differently where a
// non-admin could be allowed (database members, the _metrics role); those were not recorded,
// and this server has no users but the admin, so it answers every one as recorded for
// admin endpoints.
var (
	errBadCredentials = errorReply(http.StatusUnauthorized, "unauthorized", "Name or password is incorrect.") // 02_wrong_password_401
	errNotAdmin       = errorReply(http.StatusUnauthorized, "unauthorized", "You are not a server admin.")    // 02_no_credentials_*_401
)

// authorize reports whether the request may go on, and if not, the answer.
func (s *Server) authorize(r *http.Request) (reply, bool) {
	if user, password, ok := r.BasicAuth(); ok {
		if user != s.cfg.user || password != s.cfg.password {
			return errBadCredentials, false
		}
		return reply{}, true
	}
	if isPublic(r) {
		return reply{}, true
	}
	return errNotAdmin, false
}

func isPublic(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := strings.Trim(r.URL.Path, "/")
	return p == "" || p == "_up"
}
