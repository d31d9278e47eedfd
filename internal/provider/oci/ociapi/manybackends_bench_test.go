package ociapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// listedPage is a page of n load balancers of OCI's listing, each with a
// backend set of nodes backends, as OCI answers it.
func listedPage(n, nodes int) []byte {
	var page []map[string]any
	for i := range n {
		bs := make([]map[string]any, nodes)
		for j := range bs {
			ip := fmt.Sprintf("10.0.%d.%d", j/250, j%250+1)
			bs[j] = map[string]any{"name": ip + ":30080", "ipAddress": ip, "port": 30080, "weight": 1, "drain": false, "backup": false, "offline": false}
		}
		page = append(page, map[string]any{"id": fmt.Sprintf("ocid1.loadbalancer.oc1.iad.lb%05d", i), "displayName": fmt.Sprintf("uid-%05d", i),
			"lifecycleState": "ACTIVE", "backendSets": map[string]any{"TCP-80": map[string]any{"name": "TCP-80", "policy": "ROUND_ROBIN",
				"backends": bs, "healthChecker": map[string]any{"protocol": "HTTP", "port": 10256, "urlPath": "/healthz"}}}})
	}
	b, _ := json.Marshal(page)
	return b
}

// BenchmarkDecodeAListingPage decodes a page of 15 load balancers on 5,000
// Nodes (about 8 MB: what a page at 5,000 Nodes holds under the response
// limit).
func BenchmarkDecodeAListingPage(b *testing.B) {
	data := listedPage(15, 5000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		var out []LB
		if err := decodeAnswer(bytes.NewReader(data), &out); err != nil {
			b.Fatal(err)
		}
		if out[0].BackendSets["TCP-80"].Many == nil {
			b.Fatal("not kept as a digest")
		}
	}
}
