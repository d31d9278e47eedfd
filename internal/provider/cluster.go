package provider

import (
	"context"
	"errors"
	"fmt"
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

// CredentialsReload is how often a cloud's config file is read again for
// rotated credentials: kubelet refreshes a mounted Secret about every
// minute, so new credentials are in use within about 70 s.
const CredentialsReload = 10 * time.Second

// Rereadable is a cloud's config: read again from its file, and checked.
type Rereadable[C any] interface {
	*C
	Reread() (C, error)
	Validate() error
}

// WatchConfig reads cfg's file (path; "" for a config that came from a
// stream: nothing to watch) again every interval until stop, and hands what
// it read, checked, to apply, which says whether anything in use changed. A
// file that cannot be read or is invalid changes nothing: the cloud keeps
// working with what it has, and the problem is logged once until it changes.
func WatchConfig[C any, P Rereadable[C]](stop <-chan struct{}, interval time.Duration, cloud, path string, cfg P, apply func(C) (bool, error)) {
	if path == "" {
		return
	}
	logger := klog.Background().WithValues("cloud", cloud, "file", path)
	var lastErr string
	wait.Until(func() {
		next, err := cfg.Reread()
		if err == nil {
			err = P(&next).Validate()
		}
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				logger.Error(err, "The cloud config changed but is not valid; keeping the settings in use")
				lastErr = msg
			}
			return
		}
		lastErr = ""
		changed, err := apply(next)
		switch {
		case err != nil:
			logger.Error(err, "Cannot use the changed settings; keeping the ones in use")
		case changed:
			logger.Info("The credentials changed; the next call uses them")
		}
	}, interval, stop)
}

// ErrClusterUnknown is Known's error while the cluster's UID is not known.
var ErrClusterUnknown = errors.New("the cluster's UID is not known")

// Known is the UID, or ErrClusterUnknown: what a sweep needs before it can
// tell this cluster's objects from another's.
func (c *ClusterUID) Known() (string, error) {
	if uid := c.Get(); uid != "" {
		return uid, nil
	}
	return "", ErrClusterUnknown
}

// Attach tells cloud, run by a tool outside the CCM (overcast explain,
// sweep), what Start would learn: the cluster's UID, which marks what it
// made, the client its reads use, and the namespace of its records (home;
// "" leaves it).
func Attach(ctx context.Context, cloud any, kube kubernetes.Interface, home string) error {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot read the cluster's UID (the kube-system namespace's): %w", err)
	}
	if c, ok := cloud.(interface{ SetClusterUID(string) }); ok {
		c.SetClusterUID(string(ns.UID))
	}
	if c, ok := cloud.(interface{ SetKube(kubernetes.Interface) }); ok {
		c.SetKube(kube)
	}
	if c, ok := cloud.(interface{ SetHome(string) }); ok && home != "" {
		c.SetHome(home)
	}
	return nil
}
