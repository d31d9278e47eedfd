package ccm

import (
	"context"

	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	cloudnode "k8s.io/cloud-provider/controllers/node"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// startNodeController starts the framework's cloud node controller as the
// framework does, but with its Events sent by a client of their own: each
// Node it initialises costs two writes and a "Synced" Event, and the Events,
// best-effort, would otherwise take a third of the client's limit from the
// Nodes' writes (measured by `bench -count-requests`) and be dropped when
// their queue of 1,000 fills.
func startNodeController(ctx context.Context, ic app.ControllerInitContext, cc genericcontrollermanager.ControllerContext, cfg *config.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	client := eventsApart{
		Interface: cfg.ClientBuilder.ClientOrDie(ic.ClientName),
		events:    cfg.ClientBuilder.ClientOrDie(ic.ClientName).CoreV1(),
	}
	nc, err := cloudnode.NewCloudNodeController(
		cfg.SharedInformers.Core().V1().Nodes(),
		client,
		cloud,
		cfg.ComponentConfig.NodeStatusUpdateFrequency.Duration,
		cfg.ComponentConfig.NodeController.ConcurrentNodeSyncs,
		cfg.ComponentConfig.NodeController.ConcurrentNodeStatusUpdates,
	)
	if err != nil {
		// As the framework: a cloud without instances runs no node controller.
		klog.FromContext(ctx).Info("The cloud node controller does not start", "err", err)
		return nil, false, nil
	}
	go nc.RunWithContext(ctx, cc.ControllerManagerMetrics)
	return nil, true, nil
}

// eventsApart is a clientset whose Events go through another clientset, with
// its own client-side limit.
type eventsApart struct {
	kubernetes.Interface
	events typedcorev1.EventsGetter
}

func (c eventsApart) CoreV1() typedcorev1.CoreV1Interface {
	return coreEventsApart{CoreV1Interface: c.Interface.CoreV1(), events: c.events}
}

type coreEventsApart struct {
	typedcorev1.CoreV1Interface
	events typedcorev1.EventsGetter
}

func (c coreEventsApart) Events(namespace string) typedcorev1.EventInterface {
	return c.events.Events(namespace)
}
