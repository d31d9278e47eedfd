// Package framework is what a test adds to the development cluster of
// internal/devenv: overcast-ccm in-process or as a process, bound to the RBAC
// shipped in deploy/, a namespace per test, the doctor and CLI run as a
// person would, and a proxy between the CCM and a cloud.
package framework

import "github.com/overcast-ccm/overcast/internal/devenv"

// Env is a running control plane, shared by the tests of one package, with
// what only a test needs of it.
type Env struct{ *devenv.Env }

// Start starts the control plane (devenv.Start). Call it once per package,
// from TestMain.
func Start() (*Env, error) { return StartWith(devenv.StartOptions{}) }

// StartWith is Start with options.
func StartWith(o devenv.StartOptions) (*Env, error) {
	e, err := devenv.StartWith(o)
	if err != nil {
		return nil, err
	}
	return &Env{e}, nil
}
