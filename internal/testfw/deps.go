package testfw

import (
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/time/rate"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
)
