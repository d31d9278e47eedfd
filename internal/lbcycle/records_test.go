package lbcycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func serviceWith(annotations map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: annotations}}
}

func TestAnnotationRecordsReadTheFormatsCloudsWrite(t *testing.T) {
	inOne := &AnnotationRecords{Converged: "example.org/converged"}
	withAddress := &AnnotationRecords{Converged: "example.org/converged", Address: "example.org/address"}
	want := Record{ID: "lb-1", Fingerprint: Fingerprint{Config: "0123456789abcdef", Members: "01234567"}, Address: "203.0.113.7"}
	for _, tt := range []struct {
		name    string
		records *AnnotationRecords
		ann     map[string]string
		want    Record
		ok      bool
	}{
		{"the address after the fingerprint", inOne,
			map[string]string{"example.org/converged": "lb-1/0123456789abcdef.01234567/203.0.113.7"}, want, true},
		{"the address in an annotation of its own", withAddress,
			map[string]string{"example.org/converged": "lb-1/0123456789abcdef.01234567", "example.org/address": "203.0.113.7"}, want, true},
		{"no record", inOne, nil, Record{}, false},
		{"no address where it belongs in the record", inOne,
			map[string]string{"example.org/converged": "lb-1/0123456789abcdef.01234567"}, Record{}, false},
		{"a fingerprint without its members part", inOne,
			map[string]string{"example.org/converged": "lb-1/0123456789abcdef/203.0.113.7"}, Record{}, false},
		{"no id", inOne, map[string]string{"example.org/converged": "/0123456789abcdef.01234567/203.0.113.7"}, Record{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.records.Get(serviceWith(tt.ann))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAServiceWithNoRecordIsNeverRead(t *testing.T) {
	r := &AnnotationRecords{Converged: "example.org/converged", None: func(*v1.Service) bool { return true }}
	_, ok := r.Get(serviceWith(map[string]string{"example.org/converged": "lb-1/0123456789abcdef.01234567/203.0.113.7"}))
	assert.False(t, ok)
}

func TestRecordsWithoutAClientWriteNothing(t *testing.T) {
	r := &AnnotationRecords{Converged: "example.org/converged"}
	svc := serviceWith(nil)
	r.Put(t.Context(), svc, Record{ID: "lb-1", Address: "203.0.113.7"})
	r.Forget(t.Context(), svc)
	assert.Empty(t, svc.Annotations)
}

// The fingerprints recorded on Services in the field must not change when the
// code that computes them moves: a changed hash walks every load balancer.
// The values are SHA-256 of the lines as printed, computed apart
// (python3: hashlib.sha256(b"v1 name 80\n").hexdigest()[:16]).
func TestHashesAreStable(t *testing.T) {
	h := NewHash()
	h.Line("v1", "name", 80)
	assert.Equal(t, "7f9f40ca4d3a9d9a", h.Config())
	assert.Equal(t, "229fa8eb", MembersOf([]string{"10.0.0.1", "10.0.0.2"}))
}
