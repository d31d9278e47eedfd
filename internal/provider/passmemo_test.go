package provider

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An object is read once a pass; a failed read is not kept; a read begun
// before Forget is not kept for the next pass.
func TestPassMemoReadsEachObjectOnceAPass(t *testing.T) {
	var m PassMemo[int]
	reads := 0
	read := func(context.Context) (int, error) { reads++; return reads, nil }
	for range 2 {
		v, err := m.Get(t.Context(), "a", read)
		require.NoError(t, err)
		assert.Equal(t, 1, v)
	}
	_, err := m.Get(t.Context(), "b", func(context.Context) (int, error) { return 0, errors.New("down") })
	require.Error(t, err)
	_, known := m.Known("b")
	assert.False(t, known, "a failed read is not kept")

	m.Forget()
	_, known = m.Known("a")
	assert.False(t, known)
	v, err := m.Get(t.Context(), "a", func(ctx context.Context) (int, error) {
		m.Forget() // the pass ends while this read is under way
		return read(ctx)
	})
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	_, known = m.Known("a")
	assert.False(t, known, "a read begun before Forget is not kept")
}
