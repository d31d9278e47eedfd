//go:build nodev

package main

import "errors"

// The image's overcast is built with -tags nodev: `overcast dev` runs etcd and
// kube-apiserver from the repository's cache, and its test framework (envtest)
// needs a writable /tmp, which a pod with a read-only root file system has not.
func runDev([]string) error {
	return errors.New("not part of this build (the image's); run it from the repository: make run")
}
