package builders

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Keys of the admin Secret: the names the Apache chart reads through extraSecretName.
const (
	AdminUsernameKey = "adminUsername"
	AdminPasswordKey = "adminPassword"
	cookieAuthKey    = "cookieAuthSecret"
	erlangCookieKey  = "erlangCookie"
	adminUser        = "admin"
)

// AdminSecret holds the admin credentials and cluster cookies of one provisioned arm. The
// operator makes them once and passes the Secret to the chart (extraSecretName): left to
// itself the chart would make a new random password on every render. random is the source
// of the secrets (crypto/rand.Reader outside tests).
func AdminSecret(bench *benchv1.CouchBenchmark, arm string, random io.Reader) (*corev1.Secret, error) {
	data := map[string][]byte{AdminUsernameKey: []byte(adminUser)}
	for _, key := range []string{AdminPasswordKey, cookieAuthKey, erlangCookieKey} {
		b := make([]byte, 24)
		if _, err := io.ReadFull(random, b); err != nil {
			return nil, fmt.Errorf("generating %s: %w", key, err)
		}
		data[key] = []byte(base64.RawURLEncoding.EncodeToString(b))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: AdminSecretName(bench, arm), Namespace: bench.Namespace,
			Labels: Labels(bench, arm, ""), OwnerReferences: ownedBy(bench),
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}, nil
}

// Random is the source of generated secrets.
var Random io.Reader = rand.Reader

func ownedBy(bench *benchv1.CouchBenchmark) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(bench, benchv1.GroupVersion.WithKind("CouchBenchmark"))}
}
