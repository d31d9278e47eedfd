package devenv

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Diagnostics for a long run a person reads afterwards (make chaos): both
// are off unless asked for, and neither changes what a test checks.
//
//   - OVERCAST_E2E_AUDIT_DIR: the apiserver's audit log of every write to a
//     Service (who changed it, and how), one file per control plane.
//   - OVERCAST_E2E_LOGS_DIR: every overcast-ccm process's log, kept as
//     <name>-<pid>.log when it ends (the test's own copy goes with it).

// auditPolicy logs the writes to Services with their bodies, nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: ""
    resources: ["services", "services/status"]
- level: None
`

// ccmAuditPolicy logs every request of the CCM's user, without bodies.
const ccmAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + CCMUser + `"]
- level: None
`

// auditTo has the apiserver of te write its audit log: of the CCM's
// requests to ccmLog when it is set, else of the writes to Services to
// OVERCAST_E2E_AUDIT_DIR when that is set. The policy file goes in dir.
func auditTo(te *envtest.Environment, dir, ccmLog string) error {
	policy, log := auditPolicy, ccmLog
	if ccmLog != "" {
		policy = ccmAuditPolicy
	} else {
		out := os.Getenv("OVERCAST_E2E_AUDIT_DIR")
		if out == "" {
			return nil
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(out, "audit-*.log")
		if err != nil {
			return err
		}
		_ = f.Close()
		log = f.Name()
	}
	file := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(file, []byte(policy), 0o600); err != nil {
		return err
	}
	te.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", file).
		Set("audit-log-path", log).
		Set("audit-log-maxsize", "0")
	return nil
}

// KeepLog copies a process's log to OVERCAST_E2E_LOGS_DIR, when set.
func KeepLog(name string, pid int, path string) {
	out := os.Getenv("OVERCAST_E2E_LOGS_DIR")
	if out == "" {
		return
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.MkdirAll(out, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(out, fmt.Sprintf("%s-%d.log", name, pid)), data, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot keep the log of %s: %v\n", name, err)
	}
}
