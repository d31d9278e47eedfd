package ccm

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// trimCaches makes the shared Node and Service caches keep only what the
// controllers read. Every Node is cached once, for the node controllers and
// the service controller (which keeps, per Service, only hashes of its spec
// and of its Nodes, never the Nodes): what a Node carries is held as many
// times as there are Nodes. No controller here reads managed fields, nor a
// Node's image list (up to 50 images with their names, most of a real Node's
// size). Writes stay whole: an update that omits managed fields keeps them, a
// Node's status is written only by patches of what changed, and an update of
// a Node never writes its status.
func trimCaches(f informers.SharedInformerFactory) error {
	if err := f.Core().V1().Nodes().Informer().SetTransform(trimObject); err != nil {
		return err
	}
	return f.Core().V1().Services().Informer().SetTransform(trimObject)
}

func trimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Node:
		o.ManagedFields = nil
		o.Status.Images = nil
	case *v1.Service:
		o.ManagedFields = nil
	case cache.DeletedFinalStateUnknown:
		if _, err := trimObject(o.Obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
