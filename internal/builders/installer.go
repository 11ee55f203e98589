package builders

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallerName names the ServiceAccount that Helm acts as in a benchmark's namespace, and
// its RoleBinding there: every Helm call for the namespace's benchmarks impersonates it, so
// that a chart does what that ServiceAccount may, the installer ClusterRole's rights in that
// namespace, and never what the operator may.
const InstallerName = "couchbench-installer"

// InstallerServiceAccount is the installer's ServiceAccount in namespace. It is shared by the
// namespace's benchmarks and owned by none: a benchmark's deletion leaves it for the others.
// No pod runs as it, so it carries no token.
func InstallerServiceAccount(namespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Namespace: namespace, Name: InstallerName, Labels: installerLabels()},
		AutomountServiceAccountToken: new(bool),
	}
}

// InstallerRoleBinding binds the installer's ServiceAccount in namespace to clusterRole, the
// operator's installer ClusterRole.
func InstallerRoleBinding(namespace, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: InstallerName, Labels: installerLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: InstallerName}},
	}
}

func installerLabels() map[string]string { return map[string]string{LabelManagedBy: ManagedBy} }
