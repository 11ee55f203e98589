// Package benchspec reads a CouchBenchmark from a file the way the API server would: it
// applies the CRD's defaults and checks its OpenAPI and CEL rules, using the generated CRD
// itself, so that `couchbench run -f bench.yaml` accepts, rejects and defaults exactly
// what `kubectl apply -f bench.yaml` does. Unknown fields are errors here (the API server
// would drop them silently, and a typo would then run a different benchmark).
package benchspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/config/crd"
)

// schema is the CRD's v1alpha1 schema, prepared once.
type schema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var loadSchema = sync.OnceValues(func() (*schema, error) {
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crd.CouchBenchmark, &def); err != nil {
		return nil, fmt.Errorf("embedded CRD: %w", err)
	}
	var v1props *apiextensionsv1.JSONSchemaProps
	for _, v := range def.Spec.Versions {
		if v.Name == benchv1.GroupVersion.Version && v.Schema != nil {
			v1props = v.Schema.OpenAPIV3Schema
		}
	}
	if v1props == nil {
		return nil, fmt.Errorf("embedded CRD has no %s schema", benchv1.GroupVersion.Version)
	}
	var props apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1props, &props, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&props)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&props)
	if err != nil {
		return nil, err
	}
	return &schema{structural: structural, validator: validator, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
})

// Parse reads one CouchBenchmark (YAML or JSON), defaults and validates it as the API server
// would. The error lists every problem with its field path.
func Parse(data []byte) (*benchv1.CouchBenchmark, error) { return parse(data, nil) }

// NoSecret names the credentials Secret of a benchmark read by ParseByHand that named none.
const NoSecret = "-"

// ParseByHand reads a benchmark that `couchbench` runs by hand: as Parse, except that an
// existing CouchDB needs no spec.couchdb.existing.credentialsSecret. By hand, credentials
// come from COUCHDB_USER/COUCHDB_PASSWORD or --credentials-dir, never from a Secret.
func ParseByHand(data []byte) (*benchv1.CouchBenchmark, error) {
	return parse(data, func(obj map[string]any) {
		existing := unstructuredMap(obj, "spec", "couchdb", "existing")
		if existing != nil && existing["credentialsSecret"] == nil {
			existing["credentialsSecret"] = map[string]any{"name": NoSecret}
		}
	})
}

// unstructuredMap is the object at path, or nil.
func unstructuredMap(obj map[string]any, path ...string) map[string]any {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

func parse(data []byte, adjust func(obj map[string]any)) (*benchv1.CouchBenchmark, error) {
	s, err := loadSchema()
	if err != nil {
		return nil, err
	}
	// Decode as the API server does: integers as int64, which the schema and CEL rules
	// expect (a plain YAML decode would make them float64).
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(jsonData, &obj); err != nil {
		return nil, fmt.Errorf("not a YAML or JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("empty document")
	}
	if got := fmt.Sprint(obj["apiVersion"], "/", obj["kind"]); got != benchv1.GroupVersion.String()+"/CouchBenchmark" {
		return nil, fmt.Errorf("apiVersion/kind is %s, want %s/CouchBenchmark", got, benchv1.GroupVersion.String())
	}
	if adjust != nil {
		adjust(obj)
	}
	// Unknown fields first: a misspelt field would otherwise be dropped and defaulted.
	unknown := pruning.PruneWithOptions(runtime.DeepCopyJSON(obj), s.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		return nil, fmt.Errorf("CouchBenchmark has unknown fields (misspelt?):\n  %s", strings.Join(unknown, "\n  "))
	}
	defaulting.Default(obj, s.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	if len(errs) == 0 {
		// CEL rules assume a schema-valid object, as in the API server.
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		return nil, describe("invalid", errs)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var bench benchv1.CouchBenchmark
	if err := json.Unmarshal(raw, &bench); err != nil {
		return nil, err
	}
	return &bench, nil
}

func describe(what string, errs field.ErrorList) error {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  " + e.Error()
	}
	return fmt.Errorf("CouchBenchmark %s:\n%s", what, strings.Join(lines, "\n"))
}
