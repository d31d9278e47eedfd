package providertest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Reread is svc as kube holds it now: with the annotations and status the
// cycle wrote since (a test's Service object does not see them); usable
// in a cleanup, after t's context is done.
func Reread(t testing.TB, kube kubernetes.Interface, svc *v1.Service) *v1.Service {
	t.Helper()
	got, err := kube.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
