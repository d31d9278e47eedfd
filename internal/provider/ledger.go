package provider

import (
	"sync/atomic"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// LedgerName is the ConfigMap of a cloud's members ledger, in the CCM's
// home namespace.
const LedgerName = lbcycle.LedgerName

// home is the namespace the CCM keeps its own objects in: its leader
// election's (SetHome).
type home struct{ namespace atomic.Pointer[string] }

// SetHome says the namespace the CCM keeps its own objects in, its leader
// election Lease's: the members ledger lives there. Until it is said, the
// cloud has no ledger, and its Records are the Services' annotations alone.
func (b *Base) SetHome(namespace string) { b.home.namespace.Store(&namespace) }

// Ledger is the members ledger of the cloud's load balancers' Records, one
// for all its Services (the same on every call).
func (b *Base) Ledger() *lbcycle.MembersLedger {
	b.ledgerOnce.Do(func() {
		b.ledger = &lbcycle.MembersLedger{Kube: b.Kube, Where: func() (string, string) {
			if ns := b.home.namespace.Load(); ns != nil && *ns != "" {
				return *ns, LedgerName
			}
			return "", ""
		}}
	})
	return b.ledger
}
