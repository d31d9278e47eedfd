package provider

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
)

type vm struct{ id, state string }

func TestANodeNamedBySeveralMachinesIsAmbiguousAndNamesThem(t *testing.T) {
	id := func(m vm) string { return m.id }
	_, found, err := OneNamed(nil, id, "servers", "n1", "p://")
	assert.False(t, found)
	require.NoError(t, err)

	m, found, err := OneNamed([]vm{{id: "a"}}, id, "servers", "n1", "p://")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "a", m.id)

	_, found, err = OneNamed([]vm{{id: "a"}, {id: "b"}}, id, "servers", "n1", "p://")
	assert.False(t, found)
	amb, ok := errors.AsType[*AmbiguousError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "2 servers are named n1 (a, b): set the Node's providerID to p://<id>", amb.Error())
}

func TestShutdownAndLookupAnswersKeepErrorsAndNotFoundApart(t *testing.T) {
	off := func(m vm) bool { return m.state == "off" }
	boom := errors.New("503")

	_, err := InstanceShutdown(vm{}, false, boom, off)
	assert.ErrorIs(t, err, boom)
	_, err = InstanceShutdown(vm{}, false, nil, off)
	assert.ErrorIs(t, err, cloudprovider.InstanceNotFound)
	down, err := InstanceShutdown(vm{state: "off"}, true, nil, off)
	require.NoError(t, err)
	assert.True(t, down)

	var b Base
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	assert.ErrorIs(t, b.Looked(t.Context(), node, "server", false, boom, "by name"), boom)
	assert.ErrorIs(t, b.Looked(t.Context(), node, "server", false, nil, "by name"), cloudprovider.InstanceNotFound)
	assert.NoError(t, b.Looked(t.Context(), node, "server", true, nil, "by name"))
}
