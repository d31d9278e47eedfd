package local

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// The load balancer's options read every annotation as its check
// (internal/annotation, what the admission policy is made of) says.
func TestTheOptionsAgreeWithTheAnnotationChecks(t *testing.T) {
	c := newTestCloud(t, testInstances...)
	providertest.ChecksAgree(t, annotation.ChecksOf(ProviderName), func() *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	}, func(svc *v1.Service) error {
		_, err := c.lb.parseOptions(svc)
		return err
	})
}
