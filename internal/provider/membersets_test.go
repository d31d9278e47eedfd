package provider

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOneAddedIsTheOneMemberWantHasBeyondLast(t *testing.T) {
	for _, c := range []struct {
		last, want []string
		added      string
		ok         bool
	}{
		{[]string{"a", "c"}, []string{"a", "b", "c"}, "b", true},
		{[]string{"b", "c"}, []string{"a", "b", "c"}, "a", true},
		{[]string{"a", "b"}, []string{"a", "b", "c"}, "c", true},
		{nil, []string{"a"}, "a", true},
		{[]string{"a", "b"}, []string{"a", "b"}, "", false},           // nothing joined
		{[]string{"a", "b"}, []string{"a", "c", "d"}, "", false},      // one left, two joined
		{[]string{"a", "b", "c"}, []string{"a", "c"}, "", false},      // one left
		{[]string{"a", "b"}, []string{"a", "b", "c", "d"}, "", false}, // two joined
		{[]string{"a", "x"}, []string{"a", "b", "c"}, "", false},      // as many more, not the same
	} {
		added, ok := OneAdded(c.last, c.want)
		assert.Equal(t, c.ok, ok, "%v → %v", c.last, c.want)
		assert.Equal(t, c.added, added, "%v → %v", c.last, c.want)
	}
}

func TestMemberSetsKeepTheLatestFew(t *testing.T) {
	var m MemberSets
	for i := range memberSetsKept + 4 {
		m.Note(fmt.Sprint(i), []string{fmt.Sprint(i)})
	}
	assert.Nil(t, m.Get("0"), "the oldest gone")
	assert.Nil(t, m.Get("3"))
	got := m.Get(fmt.Sprint(memberSetsKept + 3))
	if assert.NotNil(t, got) {
		assert.Equal(t, []string{fmt.Sprint(memberSetsKept + 3)}, *got)
	}
	m.Note("4", []string{"changed"}) // kept already: as first noted
	assert.Equal(t, []string{"4"}, *m.Get("4"))
}
