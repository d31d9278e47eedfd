package core

import (
	"fmt"
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

func TestStorePagesAParentsChildrenInCreationOrderAfterAMarker(t *testing.T) {
	s := NewStore[string]()
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		s.Add(id, "v"+id)
	}
	children := []string{"f", "b", "zz", "d", "e"} // as a parent names them: any order, one gone
	page, more, err := s.PageOf(children, "", 2, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"vb", "vd"}, page)
	assert.True(t, more)
	require.True(t, s.Remove("d"), "the marker goes between two pages")
	page, more, err = s.PageOf(children, "d", 0, func(v string) bool { return v != "vf" })
	require.NoError(t, err)
	assert.Equal(t, []string{"ve"}, page, "after a removed marker, what keep refuses skipped")
	assert.False(t, more)
	_, _, err = s.PageOf(children, "zz", 1, nil)
	assert.ErrorIs(t, err, ErrBadMarker)
}

func TestStoreRemovalsAreCompactedAwayAndNeverListed(t *testing.T) {
	s := NewStore[int]()
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%04d", i)
		s.Add(ids[i], i)
	}
	for i, id := range ids {
		if i%3 != 0 {
			require.True(t, s.Remove(id))
		}
	}
	assert.LessOrEqual(t, len(s.order), 2*s.Len(), "removed entries are dropped once they are half the order")
	assert.Equal(t, 334, s.Len())
	all := s.All()
	require.Len(t, all, 334)
	for i, v := range all {
		assert.Equal(t, 3*i, v)
	}
	page, more, err := s.Page(ids[1], 2, false, nil) // a removed marker
	require.NoError(t, err)
	assert.Equal(t, []int{3, 6}, page)
	assert.True(t, more)
	page, _, err = s.Page(ids[7], 0, true, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{6, 3, 0}, page, "in reverse, from a removed marker")
}
