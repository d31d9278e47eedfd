package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestANodeSetsMembersAreMadeOnceASliceAndKey(t *testing.T) {
	var first NodeSetMemo[int]
	assert.Equal(t, 7, first.Get(nil, "", func() (int, bool) { return 7, true }), "a first set of no Nodes")
	var m NodeSetMemo[int]
	made := 0
	make := func(v int, keep bool) func() (int, bool) {
		return func() (int, bool) { made++; return v, keep }
	}
	set := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	assert.Equal(t, 1, m.Get(set, "", make(1, true)))
	assert.Equal(t, 1, m.Get(set, "", make(9, true)), "kept")
	assert.Equal(t, 2, m.Get(set, "role=web", make(2, true)), "another key is made")
	assert.Equal(t, 2, made)

	copied := append([]*v1.Node(nil), set...)
	assert.Equal(t, 3, m.Get(copied, "", make(3, true)), "an equal slice that is another is another set")
	assert.Equal(t, 4, m.Get(set[:1], "", make(4, true)), "a shorter slice is another set")
	assert.Equal(t, 5, m.Get(set, "", make(5, false)), "not kept")
	assert.Equal(t, 6, m.Get(set, "", make(6, true)), "made again")
	assert.Equal(t, 6, m.Get(set, "", make(7, true)))
	assert.Equal(t, 8, m.Get(nil, "", make(8, true)), "no Nodes is a set too")
	assert.Equal(t, 8, m.Get([]*v1.Node{}, "", make(9, true)))
	for i := range nodeSetKeys + 1 {
		m.Get(set, string(rune('a'+i)), make(i, true))
	}
	assert.LessOrEqual(t, len(m.kept), nodeSetKeys, "bounded")
}
