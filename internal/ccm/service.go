package ccm

import (
	"context"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	cliflag "k8s.io/component-base/cli/flag"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/deletionguard"
	"github.com/overcast-ccm/overcast/internal/servicecontroller"
)

// serviceOptions are overcast-ccm's own flags of the service controller.
type serviceOptions struct {
	driftPeriod time.Duration
	guard       deletionguard.Options
}

func (o *serviceOptions) flags() cliflag.NamedFlagSets {
	var sets cliflag.NamedFlagSets
	fs := sets.FlagSet("overcast service controller")
	fs.DurationVar(&o.driftPeriod, "load-balancer-drift-period", servicecontroller.DefaultDriftPeriod,
		"How often the cloud's load balancers are listed (one listing for all Services) to find and repair those deleted, broken or changed behind the controller's back. 0 or less: never.")
	g := sets.FlagSet("overcast node deletion guard")
	d := deletionguard.Default
	g.Float64Var(&o.guard.Share, "node-deletion-guard-share", d.Share,
		"When the cloud says the machines of more than this share of the cluster's Nodes are gone at once, their deletions are held (a Warning says so). 1 or more: no guard.")
	g.IntVar(&o.guard.Min, "node-deletion-guard-min", d.Min,
		"This many Nodes whose machines are gone are never held, whatever the share.")
	g.DurationVar(&o.guard.Window, "node-deletion-guard-window", d.Window,
		"How long a hold lasts before the deletions go ahead. 0: until a person annotates each Node "+deletionguard.AllowAnnotation+"=true.")
	return sets
}

// controllers are the framework's controllers with Overcast's service
// controller in place of the framework's, under the same name ("service"), so
// that --controllers and every deployment keep working.
func controllers(o *serviceOptions) map[string]app.ControllerInitFuncConstructor {
	out := make(map[string]app.ControllerInitFuncConstructor, len(app.DefaultInitFuncConstructors))
	for name, c := range app.DefaultInitFuncConstructors {
		out[name] = c
	}
	out[names.CloudNodeController] = app.ControllerInitFuncConstructor{
		InitContext: app.DefaultInitFuncConstructors[names.CloudNodeController].InitContext,
		Constructor: func(initContext app.ControllerInitContext, cfg *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, cc genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startNodeController(ctx, initContext, cc, cfg, cloud)
			}
		},
	}
	out[names.ServiceLBController] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: "service-controller"},
		Constructor: func(initContext app.ControllerInitContext, cfg *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startServiceController(ctx, initContext, cfg, cloud, o)
			}
		},
	}
	return out
}

func startServiceController(ctx context.Context, initContext app.ControllerInitContext, cfg *config.CompletedConfig, cloud cloudprovider.Interface, o *serviceOptions) (controller.Interface, bool, error) {
	if _, ok := cloud.LoadBalancer(); !ok {
		klog.FromContext(ctx).Info("The cloud serves no load balancers; the service controller does not start", "cloud", cloud.ProviderName())
		return nil, false, nil
	}
	drift := o.driftPeriod
	if drift <= 0 {
		drift = -1
	}
	ignored := make([]string, 0, len(annotation.Recorded))
	for _, a := range annotation.Recorded {
		ignored = append(ignored, string(a))
	}
	c, err := servicecontroller.New(cloud,
		cfg.ClientBuilder.ClientOrDie(initContext.ClientName),
		cfg.SharedInformers.Core().V1().Services(),
		cfg.SharedInformers.Core().V1().Nodes(),
		servicecontroller.Options{
			ClusterName:        cfg.ComponentConfig.KubeCloudShared.ClusterName,
			Workers:            int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs),
			DriftPeriod:        drift,
			IgnoredAnnotations: ignored,
		})
	if err != nil {
		return nil, false, err
	}
	go c.Run(ctx)
	return nil, true, nil
}
