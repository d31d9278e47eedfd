package provider

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// ClusterUID is the cluster's UID (the kube-system namespace's), which tags
// the cloud resources a cluster owns. The zero value is empty until Learn (or
// Set) fills it; embed it.
type ClusterUID struct {
	mu  sync.Mutex
	uid string
}

// Learn reads the UID in the background, every 2 s until it is read or stop.
func (c *ClusterUID) Learn(client kubernetes.Interface, stop <-chan struct{}) {
	go func() {
		ctx := wait.ContextForChannel(stop)
		_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
			ns, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
			if err != nil {
				klog.FromContext(ctx).Error(err, "Cannot read the kube-system namespace for the cluster UID; retrying")
				return false, nil
			}
			c.Set(string(ns.UID))
			return true, nil
		})
	}()
}

// Set sets the UID (tests, and Learn).
func (c *ClusterUID) Set(uid string) {
	c.mu.Lock()
	c.uid = uid
	c.mu.Unlock()
}

// Get is the UID, "" while it is not known.
func (c *ClusterUID) Get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.uid
}

// WatchConfig reads a cloud's config file again every interval (reread
// returns it validated) and hands what it read to apply, which says whether
// anything in use changed. A file that cannot be read or is invalid changes
// nothing: the cloud keeps working with what it has, and the problem is
// logged once until it changes.
func WatchConfig[C any](stop <-chan struct{}, interval time.Duration, logger klog.Logger, reread func() (C, error), apply func(C) (bool, error)) {
	var lastErr string
	wait.Until(func() {
		cfg, err := reread()
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				logger.Error(err, "The cloud config changed but is not valid; keeping the settings in use")
				lastErr = msg
			}
			return
		}
		lastErr = ""
		changed, err := apply(cfg)
		switch {
		case err != nil:
			logger.Error(err, "Cannot use the changed settings; keeping the ones in use")
		case changed:
			logger.Info("The [Global] settings changed; the next call uses them")
		}
	}, interval, stop)
}
