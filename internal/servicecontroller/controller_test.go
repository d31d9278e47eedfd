package servicecontroller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

func svc(mutate ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Annotations: map[string]string{}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func withFinalizer(s *v1.Service) {
	s.Finalizers = []string{servicehelper.LoadBalancerCleanupFinalizer}
}
func clusterIP(s *v1.Service)    { s.Spec.Type = v1.ServiceTypeClusterIP }
func classed(s *v1.Service)      { s.Spec.LoadBalancerClass = new("example.com/other") }
func beingDeleted(s *v1.Service) { now := metav1.Now(); s.DeletionTimestamp = &now }

func TestWhichServicesAreOurs(t *testing.T) {
	for _, tt := range []struct {
		name         string
		svc          *v1.Service
		wants, clean bool
	}{
		{"a LoadBalancer Service wants one", svc(), true, false},
		{"a ClusterIP Service does not", svc(clusterIP), false, false},
		{"a Service of another class is not ours", svc(classed), false, false},
		{"one with our finalizer that turned ClusterIP is cleaned up", svc(withFinalizer, clusterIP), false, true},
		{"one with our finalizer that is being deleted is cleaned up", svc(withFinalizer, beingDeleted), true, true},
		{"one being deleted without our finalizer had nothing of ours", svc(beingDeleted), true, false},
		{"one with our finalizer and a class (set while we served it) is cleaned up", svc(withFinalizer, classed), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wants, wantsLoadBalancer(tt.svc), "wants")
			assert.Equal(t, tt.clean, needsCleanup(tt.svc), "needs cleanup")
		})
	}
}

func TestWhatChangesOfAServiceMakeASync(t *testing.T) {
	c := &Controller{ignored: map[string]bool{"loadbalancer.openstack.org/load-balancer-address": true}}
	for _, tt := range []struct {
		name string
		old  *v1.Service
		cur  *v1.Service
		want bool
	}{
		{"nothing", svc(), svc(), false},
		{"status only (ours)", svc(), svc(func(s *v1.Service) { s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "1.2.3.4"}} }), false},
		{"an annotation the cloud records", svc(), svc(func(s *v1.Service) { s.Annotations["loadbalancer.openstack.org/load-balancer-address"] = "1.2.3.4" }), false},
		{"a user's annotation", svc(), svc(func(s *v1.Service) { s.Annotations["loadbalancer.openstack.org/connection-limit"] = "5" }), true},
		{"a port", svc(), svc(func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }), true},
		{"a node port", svc(), svc(func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30081 }), true},
		{"source ranges", svc(), svc(func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }), true},
		{"the external traffic policy", svc(), svc(func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }), true},
		{"loadBalancerIP", svc(), svc(func(s *v1.Service) { s.Spec.LoadBalancerIP = "1.2.3.4" }), true},
		{"the UID (recreated)", svc(), svc(func(s *v1.Service) { s.UID = "u2" }), true},
		{"the deletion timestamp", svc(withFinalizer), svc(withFinalizer, beingDeleted), true},
		{"the type, to ClusterIP", svc(), svc(clusterIP), true},
		{"anything of two ClusterIP Services", svc(clusterIP), svc(clusterIP, func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }), false},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, c.needsUpdate(tt.old, tt.cur)) })
	}
}

func TestConditionsSayReadyWhileALoadBalancerServes(t *testing.T) {
	s := svc(func(s *v1.Service) { s.Generation = 3 })
	setConditions(s, progressingConditions(s, ReasonEnsuring, "Load balancer x is being created", false))
	assert.False(t, isReady(s))
	assert.Equal(t, "True", string(findCondition(s, ConditionProgressing).Status))
	assert.Equal(t, "False", string(findCondition(s, ConditionReady).Status), "no address yet: not ready")

	s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	setConditions(s, readyConditions(s.Generation, "Serving 203.0.113.7"))
	assert.True(t, isReady(s))
	assert.Equal(t, reasonConverged, findCondition(s, ConditionProgressing).Reason)

	s.Generation = 4
	setConditions(s, progressingConditions(s, ReasonEnsuring, "Load balancer x is being updated", false))
	assert.Equal(t, "True", string(findCondition(s, ConditionReady).Status), "an update keeps a serving load balancer Ready")
	setConditions(s, failedConditions(s, "InvalidAnnotation", "bad"))
	assert.Equal(t, "True", string(findCondition(s, ConditionReady).Status), "a refused change keeps it Ready")
	assert.Equal(t, "InvalidAnnotation", findCondition(s, ConditionProgressing).Reason)
	setConditions(s, progressingConditions(s, ReasonRepairing, "gone", true))
	assert.Equal(t, ReasonRepairing, findCondition(s, ConditionReady).Reason, "a lost load balancer is not Ready")

	removeConditions(s)
	assert.Nil(t, s.Status.Conditions)
}

func findCondition(s *v1.Service, typ string) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == typ {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}
