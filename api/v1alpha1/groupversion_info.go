// Package v1alpha1 holds the CouchBenchmark API: CouchBenchmark describes one CouchDB
// benchmark run (where CouchDB runs, which arms to compare, the dataset and the workloads) and
// reports its results; CouchBenchmarkSchedule makes runs on a cron schedule and compares each
// with a baseline.
//
// +kubebuilder:object:generate=true
// +groupName=bench.couchbench.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the CouchBenchmark API.
	GroupVersion = schema.GroupVersion{Group: "bench.couchbench.io", Version: "v1alpha1"}

	// SchemeBuilder adds the API's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &CouchBenchmark{}, &CouchBenchmarkList{}, &CouchBenchmarkSchedule{}, &CouchBenchmarkScheduleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
