package helmrelease

import (
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient tells whether an error of LoadChart or Install may pass by itself, so that the
// same call is worth making again later:
//   - the network: a DNS server that failed to answer ("server misbehaving", a timeout; not
//     one that said the name does not exist), a connection refused or reset, a timeout;
//   - a chart repository that answered 429 Too Many Requests or a 5xx;
//   - the API server's own "try again": a timeout, throttling, unavailable, an internal
//     error, an optimistic-lock conflict.
//
// What will fail the same way again is not: a chart or version that does not exist, a
// repository that answers 404, an archive that is not a chart or is cut short (its
// "unexpected EOF" cannot be told from a download cut short), a chart that does not render.
// An OCI registry's 5xx is not seen here: Helm's registry client retries those itself.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound
	}
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &opErr), errors.As(err, &netErr) && netErr.Timeout():
		return true
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsConflict(err):
		return true
	}
	m := fetchStatus.FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	code, _ := strconv.Atoi(m[1])
	return code == http.StatusTooManyRequests || code >= 500
}

// fetchStatus finds the status of a chart repository's answer in the error of Helm's HTTP
// getter (helm.sh/helm/v3/pkg/getter), which carries it only as text: "failed to fetch
// http://charts/index.yaml : 503 Service Unavailable". TestTransient pins it against a real
// server.
var fetchStatus = regexp.MustCompile(`failed to fetch \S+ : (\d{3}) `)
