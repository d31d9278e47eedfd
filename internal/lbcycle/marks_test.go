package lbcycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMarksAreByServiceAndForgotten(t *testing.T) {
	var k Marks
	assert.False(t, k.Is("a", ""), "no mark is not the empty one")
	k.Set("a", "x")
	k.Set("b", "y")
	assert.True(t, k.Is("a", "x"))
	assert.False(t, k.Is("a", "y"))
	assert.Equal(t, "y", k.Of("b"))
	k.Forget("a")
	assert.False(t, k.Is("a", "x"))
	assert.Equal(t, "y", k.Of("b"))
}
