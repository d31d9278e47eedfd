// Package events records Kubernetes Events for a cloud provider. Until the
// controller manager hands the provider a client (Initialize), events are dropped.
package events

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
)

// Component is the source of every Event Overcast records.
const Component = "overcast-ccm"

// Recorder is safe to use before Start and from any goroutine. It takes only its
// own lock, so callers may hold theirs.
type Recorder struct {
	mu sync.RWMutex
	r  record.EventRecorder
}

// Start records through the API until stop is closed.
func (e *Recorder) Start(clientBuilder cloudprovider.ControllerClientBuilder, clientName string, stop <-chan struct{}) {
	client := clientBuilder.ClientOrDie(clientName)
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	e.Set(b.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component}))
	go func() {
		<-stop
		b.Shutdown()
	}()
}

// Set replaces the recorder (tests pass a record.FakeRecorder).
func (e *Recorder) Set(r record.EventRecorder) {
	e.mu.Lock()
	e.r = r
	e.mu.Unlock()
}

// Eventf records an Event on obj (a Service or a Node).
func (e *Recorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	e.mu.RLock()
	r := e.r
	e.mu.RUnlock()
	if r != nil {
		r.Eventf(obj, eventType, reason, format, args...)
	}
}
