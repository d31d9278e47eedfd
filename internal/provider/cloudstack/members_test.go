package cloudstack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
)

// The members of a Node set are made once for every Service on it, but not
// when a Node's machine was not found by its id: found later (here by its
// name, once it exists), it joins on the next pass with the same Nodes.
func TestANodeSetsMembersAreKeptOnlyWhenEveryMachineWasFoundByItsID(t *testing.T) {
	f := newFixture(t, emulator.Options{})
	known := f.nodes("worker-1", "worker-2")
	spec, _, err := f.c.lb.Spec(t.Context(), "kubernetes", service("web", httpPort), known)
	require.NoError(t, err)
	again, _, err := f.c.lb.Spec(t.Context(), "kubernetes", service("api", httpPort), known)
	require.NoError(t, err)
	require.Len(t, spec.members, 2)
	assert.Same(t, &spec.members[0], &again.members[0], "the second Service on the Nodes shares the first's members")

	nodes := append(f.nodes("worker-3"), node("worker-4", "")) // worker-4: no machine yet
	f.c.machines.Invalidate()
	spec, _, err = f.c.lb.Spec(t.Context(), "kubernetes", service("web", httpPort), nodes)
	require.NoError(t, err)
	assert.Len(t, spec.members, 1, "worker-4 has no machine")
	f.emu.AddMachine("worker-4")
	f.c.machines.Invalidate()
	spec, _, err = f.c.lb.Spec(t.Context(), "kubernetes", service("web", httpPort), nodes)
	require.NoError(t, err)
	assert.Len(t, spec.members, 2, "worker-4's machine, found by its name, joins with the same Nodes")
}
