package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// auditLine is what the bench reads of one line of the apiserver's audit log
// (audit.k8s.io/v1 Event at level Metadata).
type auditLine struct {
	AuditID   string `json:"auditID"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// requestCounts counts the CCM's requests received in [from, to) in the
// audit log at path, by the client that made them (the last part of its user
// agent: node-controller, service-controller…), verb and resource.
func requestCounts(path string, from, to time.Time) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if seen[l.AuditID] || l.Received.Before(from) || !l.Received.Before(to) {
			continue
		}
		seen[l.AuditID] = true
		client := l.UserAgent[strings.LastIndex(l.UserAgent, "/")+1:]
		res := l.ObjectRef.Resource
		if l.ObjectRef.Subresource != "" {
			res += "/" + l.ObjectRef.Subresource
		}
		out[client+" "+l.Verb+" "+res]++
	}
	return out, sc.Err()
}

// perNode writes the counts divided by n, largest first, and returns their
// sum divided by n.
func perNode(counts map[string]int, n int) (float64, string) {
	keys := make([]string, 0, len(counts))
	total := 0
	for k, c := range counts {
		keys = append(keys, k)
		total += c
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "   %-60s %6d  %.2f a Node\n", k, counts[k], float64(counts[k])/float64(n))
	}
	return float64(total) / float64(n), b.String()
}
