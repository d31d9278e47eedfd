package framework

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace named after the test and dumps its Events if the
// test fails.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	_, err := e.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.DumpEvents(t, name)
		}
	})
	return name
}

// MetricsToken returns the token of a ServiceAccount "scraper" in ns that may GET
// /metrics, as Prometheus's would: the CCM checks it through TokenReview and
// SubjectAccessReview.
func (e *Env) MetricsToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := t.Context()
	role := "overcast-e2e-metrics-" + ns
	_, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{})
	if err == nil {
		_, err = e.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = e.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
		}, metav1.CreateOptions{})
	}
	var tok *authnv1.TokenRequest
	if err == nil {
		tok, err = e.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "scraper", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("a token allowed GET /metrics: %v", err)
	}
	return tok.Status.Token
}
