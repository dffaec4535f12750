// kstatus-check: Flux's health assessment (sigs.k8s.io/cli-utils kstatus, the library
// kustomize-controller and helm-controller use) run on Kubernetes objects. Reads a JSON array
// of objects on stdin; writes a JSON array of {"status", "message"}, one per object.
// Used by tests/gitops/test_kstatus.py.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	var objects []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&objects); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus-check: reading objects:", err)
		os.Exit(2)
	}
	results := []map[string]string{}
	for _, raw := range objects {
		// Unstructured's own decoding keeps integers int64, as they come from the API server.
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			fmt.Fprintln(os.Stderr, "kstatus-check: decoding an object:", err)
			os.Exit(2)
		}
		res, err := status.Compute(obj)
		if err != nil {
			results = append(results, map[string]string{"status": "Error", "message": err.Error()})
			continue
		}
		results = append(results, map[string]string{"status": res.Status.String(), "message": res.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus-check: writing results:", err)
		os.Exit(2)
	}
}
