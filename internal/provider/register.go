// Package provider holds what every Overcast cloud provider shares.
package provider

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/events"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Register adds a cloud to the k8s.io/cloud-provider registry. read parses the
// --cloud-config (nil when none was given) and returns what it could decode even
// on error; build validates and constructs. When both fail, every problem is
// reported at once, so an operator fixes the file in one go. Registering a name
// again is a no-op.
func Register[C any, I cloudprovider.Interface](name string, read func(io.Reader) (C, error), build func(C) (I, error)) {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	if registered[name] {
		return
	}
	registered[name] = true
	configTypes[name] = reflect.TypeFor[C]()
	explainers[name] = reflect.TypeFor[I]().Implements(reflect.TypeFor[Explainer]())
	cloudprovider.RegisterCloudProvider(name, func(r io.Reader) (cloudprovider.Interface, error) {
		r, empty := nonEmpty(r)
		cfg, readErr := read(r)
		if r == nil {
			if none, ok := errors.AsType[*cfgutil.NoConfigError](readErr); ok && empty != "" {
				return nil, fmt.Errorf("--cloud-config %s is empty: %s", empty, none.Need)
			}
			return nil, readErr
		}
		if _, unparsed := errors.AsType[*cfgutil.SyntaxError](readErr); unparsed {
			return nil, readErr // nothing was read: no key is missing
		}
		c, err := build(cfg)
		if readErr != nil || err != nil {
			return nil, errors.Join(readErr, err)
		}
		return c, nil
	})
}

var (
	registeredMu sync.Mutex
	registered   = map[string]bool{}
	configTypes  = map[string]reflect.Type{}
	explainers   = map[string]bool{}
)

// ConfigType is the type of the config of the cloud registered as name (nil
// for none): its fields tagged secret:"true" are the keys that hold secrets.
func ConfigType(name string) reflect.Type {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	return configTypes[name]
}

// Explains says whether the cloud registered as name is an Explainer
// (`overcast explain`).
func Explains(name string) bool {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	return explainers[name]
}

// Names are the --cloud-provider names registered (a cloud's and its peer's
// aliases), sorted: the one list of the clouds a binary serves.
func Names() []string {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	names := make([]string, 0, len(registered))
	for n := range registered {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// nonEmpty returns nil for a missing or empty config, with the path of a
// file given but empty. The framework passes a nil *os.File as a non-nil
// io.Reader when --cloud-config is not given. A file keeps its name (a
// FileReader), so that a provider can read it again when it changes.
func nonEmpty(r io.Reader) (_ io.Reader, empty string) {
	if r == nil {
		return nil, ""
	}
	if f, ok := r.(*os.File); ok && f == nil {
		return nil, ""
	}
	name := ""
	if f, ok := r.(interface{ Name() string }); ok {
		name = f.Name()
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return failedReader{fmt.Errorf("%s: %w", cmp.Or(name, "a stream"), err)}, ""
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, cmp.Or(name, "(a stream)")
	}
	if name != "" {
		return &FileReader{Reader: bytes.NewReader(data), Path: name}, ""
	}
	return bytes.NewReader(data), ""
}

// failedReader is a config that could not be read: the cloud's Read says so.
type failedReader struct{ err error }

func (f failedReader) Read([]byte) (int, error) { return 0, f.err }

// FileReader is the --cloud-config's content with the path it was read from.
type FileReader struct {
	*bytes.Reader
	Path string
}

// Name is the file's path, as os.File's Name.
func (f *FileReader) Name() string { return f.Path }

// Common answers the parts of cloudprovider.Interface that every Overcast cloud
// answers the same way. Instances and Zones are the deprecated forms of
// InstancesV2, Clusters is unused by the controllers, and ownership comes from
// UIDs and tags, so a cluster ID is always present.
type Common struct{}

// Instances is not implemented: InstancesV2 is.
func (Common) Instances() (cloudprovider.Instances, bool) { return nil, false }

// Zones is deprecated in favour of InstancesV2.
func (Common) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not implemented.
func (Common) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// HasClusterID is true.
func (Common) HasClusterID() bool { return true }

// Base is what every cloud's Cloud embeds: Common, the Events it records, the
// cluster's UID and a Kubernetes client of its own, all set up by Start from
// the cloud's Initialize.
type Base struct {
	Common
	// Events records Events on Services and Nodes (dropped until Start).
	Events events.Recorder
	// Cluster is the cluster's UID (the kube-system namespace's), which
	// tags what the cloud creates; learnt by Start.
	Cluster ClusterUID

	kube atomic.Value // kubernetes.Interface

	home       home
	ledgerOnce sync.Once
	ledger     *lbcycle.MembersLedger

	guardOnce sync.Once
	guard     *deletionGuard
	doubt     *lookupDoubt
	nodes     atomic.Value // corelisters.NodeLister
}

// Start is the part of Initialize every cloud shares: Events recorded through
// the API, a client (named name, e.g. "overcast-openstack-cloud") for the
// cloud's own writes, and the cluster's UID learnt in the background.
func (b *Base) Start(clientBuilder cloudprovider.ControllerClientBuilder, name string, stop <-chan struct{}) {
	b.Events.Start(clientBuilder, name, stop)
	client := clientBuilder.ClientOrDie(name)
	b.SetKube(client)
	b.Cluster.Learn(client, stop)
}

// SetClusterUID sets the cluster's UID, as Start learns it (tests).
func (b *Base) SetClusterUID(uid string) { b.Cluster.Set(uid) }

// SetKube sets the client (Start, and tests).
func (b *Base) SetKube(client kubernetes.Interface) { b.kube.Store(&client) }

// Kube is the client; nil before Start.
func (b *Base) Kube() kubernetes.Interface {
	if p, ok := b.kube.Load().(*kubernetes.Interface); ok {
		return *p
	}
	return nil
}

// Init builds the cloud name from configFile as the framework's
// InitCloudProvider does, but a file that cannot be opened is an error
// naming it (the framework would exit the process with a stack trace), and
// a name no cloud has is one naming the clouds served.
func Init(name, configFile string) (cloudprovider.Interface, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("no cloud %q: this binary serves %s", name, strings.Join(Names(), ", "))
	}
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read the cloud config: %w", err)
		}
		_ = f.Close()
	}
	return cloudprovider.InitCloudProvider(name, configFile)
}
