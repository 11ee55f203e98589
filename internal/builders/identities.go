package builders

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The operator's identities in a benchmark's namespace: ServiceAccounts bound there to one of
// the operator's ClusterRoles, which act with that role's rights in that namespace and never
// with the operator's.
const (
	// InstallerName names the ServiceAccount that Helm acts as, and its RoleBinding: every Helm
	// call for the namespace's benchmarks impersonates it, so that a chart does what that
	// ServiceAccount may, the installer ClusterRole's rights.
	InstallerName = "couchbench-installer"
	// CPUReaderName names the ServiceAccount that index Jobs run as when the operator reads
	// CouchDB pods' CPU time, and its RoleBinding: get on pods and create on pods/exec
	// (podcpu), the CPU reader ClusterRole's rights.
	CPUReaderName = "couchbench-cpu-reader"
)

// NamespaceServiceAccount is the identity name in namespace. It is shared by the namespace's
// benchmarks and owned by none: a benchmark's deletion leaves it for the others. It carries
// no token unless a pod asks for one (the CPU reader's index Jobs).
func NamespaceServiceAccount(namespace, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: identityLabels()},
		AutomountServiceAccountToken: new(bool),
	}
}

// NamespaceRoleBinding binds the identity name in namespace to clusterRole.
func NamespaceRoleBinding(namespace, name, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: identityLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
}

func identityLabels() map[string]string { return map[string]string{LabelManagedBy: ManagedBy} }
