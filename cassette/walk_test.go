package cassette_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

func TestWalk(t *testing.T) {
	c, err := cassette.Open(filepath.Join(t.TempDir(), "w.cassette"), cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var items []cassette.Keyed
	for n := range 4 {
		items = append(items, cassette.Keyed{Interaction: sample(n), Key: fmt.Sprint(n), Shape: "s"})
	}
	if _, err := c.AppendAll(items); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = c.Walk(3, true, func(i *cassette.Interaction) (bool, error) {
		got = append(got, fmt.Sprintf("%d@%d", i.ID, i.RecordedAt.Second()))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[3@2 2@1 1@0]" {
		t.Errorf("Walk(3, back) visited %v, want [3@2 2@1 1@0] (id@recorded second)", got)
	}
}
