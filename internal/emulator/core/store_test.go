package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStorePagesAfterAMarkerEvenOneDeletedMeanwhile(t *testing.T) {
	s := NewStore[string]()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		s.Add(id, "v"+id)
	}
	page, more, err := s.Page("", 2, false, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"va", "vb"}, page)
	assert.True(t, more)

	require.True(t, s.Remove("b"), "the marker goes between two pages")
	assert.False(t, s.Remove("b"))
	page, more, err = s.Page("b", 2, false, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"vc", "vd"}, page)
	assert.True(t, more)
	page, more, err = s.Page("d", 2, false, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ve"}, page)
	assert.False(t, more)

	page, _, err = s.Page("d", 0, true, func(v string) bool { return v != "vc" })
	require.NoError(t, err)
	assert.Equal(t, []string{"va"}, page, "in reverse, what keep refuses is skipped")

	_, _, err = s.Page("zz", 1, false, nil)
	assert.ErrorIs(t, err, ErrBadMarker)
	assert.Equal(t, 4, s.Len())
	assert.Equal(t, []string{"va", "vc", "vd", "ve"}, s.All())
	v, ok := s.Get("c")
	assert.True(t, ok)
	assert.Equal(t, "vc", v)
}

func TestStoreLookupKeepsTheOrderOfIDsAndSkipsTheMissing(t *testing.T) {
	s := NewStore[string]()
	for _, id := range []string{"a", "b", "c"} {
		s.Add(id, "v"+id)
	}
	assert.Equal(t, []string{"vc", "va"}, s.Lookup([]string{"c", "zz", "a"}))
	assert.Empty(t, s.Lookup(nil))
}
