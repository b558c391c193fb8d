package scenario

import (
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/llmproxy/llmproxy/wire"
)

// TestFiled keeps, of an index lookup's steps, those filed under the key
// itself, in order, sharing the lookup's slice when it keeps them all.
func TestFiled(t *testing.T) {
	p := &program{steps: []cstep{
		{echo: "a", userEq: "q"}, {echo: "b", userEq: "q"}, {echo: "a", userEq: "r"}, {echo: "", userEq: ""},
	}}
	tests := []struct {
		name string
		hits []int
		user bool
		key  string
		want []int
	}{
		{"none", nil, false, "a", nil},
		{"all by echo", []int{0, 2}, false, "a", []int{0, 2}},
		{"first left out", []int{1, 2}, false, "a", []int{2}},
		{"middle left out", []int{0, 1, 2}, false, "a", []int{0, 2}},
		{"all left out", []int{1}, false, "a", []int{}},
		{"by user", []int{0, 1, 2}, true, "q", []int{0, 1}},
		{"empty key", []int{0, 3}, true, "", []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := slices.Clone(tt.hits)
			got := p.filed(hits, tt.user, tt.key)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("filed(%v, %v, %q) = %v, want %v", tt.hits, tt.user, tt.key, got, tt.want)
			}
			if len(got) > 0 && len(got) == len(hits) && &got[0] != &hits[0] {
				t.Errorf("filed copied a lookup it kept whole")
			}
			if !slices.Equal(hits, tt.hits) {
				t.Errorf("filed changed the lookup's steps to %v", hits)
			}
		})
	}
}

// TestPackedKeys checks that compile points each step's index keys, its
// latest-user equals value and its echo, into one string in file order,
// with the values they had.
func TestPackedKeys(t *testing.T) {
	b := New("packed")
	b.Step("a").WhenLatestUser(Equals("hi")).Text("hello there")
	b.Step("b").WhenSystem(Contains("x")).Text("no user condition")
	b.Step("c").WhenSystem(Equals("sys")).WhenLatestUser(Equals("")).Text("")
	b.Step("d").WhenLatestUser(Contains("err")).Error(ErrorAnswer{Status: 429, Type: "rate_limit", Message: "slow down"})
	_, prog := compiled(t, b)
	want := []struct {
		userEq string
		kept   bool // a latest-user equals condition, at conds[userEqAt]
		echo   string
	}{{"hi", true, "hellothere"}, {"", false, "nousercondition"}, {"", true, ""}, {"", false, ""}}
	var end uintptr
	for i, w := range want {
		st := &prog.steps[i]
		kept := false
		if st.userEqAt >= 0 {
			c, ok := st.conds[st.userEqAt].(*textCond)
			kept = ok && c.name == "latest-user" && c.op == OpEquals && c.value == st.userEq
		}
		if st.userEq != w.userEq || kept != w.kept || (!kept && st.userEqAt != -1) || st.echo != w.echo {
			t.Errorf("step %d: userEq %q at %d, echo %q; want %q (kept %v), %q", i, st.userEq, st.userEqAt, st.echo, w.userEq, w.kept, w.echo)
		}
		for _, k := range []string{st.userEq, st.echo} {
			if k == "" {
				continue
			}
			at := uintptr(unsafe.Pointer(unsafe.StringData(k)))
			if end != 0 && at != end {
				t.Errorf("step %d: key %q does not follow the previous key", i, k)
			}
			end = at + uintptr(len(k))
		}
	}
}

// TestHoldsKeptEquals checks that a step's latest-user equals condition,
// which holds checks by the value the step keeps, still fails and names
// itself, and that the step's other conditions are still checked.
func TestHoldsKeptEquals(t *testing.T) {
	b := New("kept")
	b.Step("a").WhenSystem(Equals("sys")).WhenLatestUser(Equals("hi")).Text("ok")
	_, prog := compiled(t, b)
	st := &prog.steps[0]
	tests := []struct {
		name, system, user string
		hasUser            bool
		ok                 bool
		failed             string
	}{
		{"both hold", "sys", "hi", true, true, ""},
		{"other fails", "other", "hi", true, false, "system"},
		{"equals fails", "sys", "hello", true, false, "latest-user"},
		{"no user text", "sys", "", false, false, "latest-user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &wire.Request{System: tt.system}
			if tt.hasUser {
				req.Turns = []wire.Turn{{Role: "user", Text: tt.user}}
			}
			m, ok := st.holds(newView(req, nil))
			if ok != tt.ok || m.Condition != tt.failed {
				t.Errorf("holds = %v, failed %q; want %v, %q", ok, m.Condition, tt.ok, tt.failed)
			}
		})
	}
}

// TestPackedNext checks that compile points the steps' candidate lists
// into one array in file order, with the values they had, and leaves a
// step with none without a list.
func TestPackedNext(t *testing.T) {
	b := New("next")
	b.Step("a").Text("1").Then("c", "b")
	b.Step("b").Text("2").Then("c")
	b.Step("c").Text("3").Complete()
	b.Step("d").Text("4").Then("a").Start()
	_, prog := compiled(t, b)
	want := [][]int{{2, 1}, {2}, nil, {0}}
	var end uintptr
	for i, w := range want {
		st := &prog.steps[i]
		if !slices.Equal(st.next, w) || st.ended != (w == nil) {
			t.Errorf("step %d: next %v (ended %v), want %v", i, st.next, st.ended, w)
		}
		if len(st.next) == 0 {
			continue
		}
		if cap(st.next) != len(st.next) {
			t.Errorf("step %d: next has room for %d, an append would write into the next step's list", i, cap(st.next))
		}
		at := uintptr(unsafe.Pointer(&st.next[0]))
		if end != 0 && at != end {
			t.Errorf("step %d: next does not follow the previous step's", i)
		}
		end = at + uintptr(len(st.next))*unsafe.Sizeof(0)
	}
}

// TestPlainAnswer checks that a step whose answer is its text alone keeps
// nothing beside it (its data fits two cache lines), and that a step with
// any other field of the answer set keeps the whole answer, which it then
// delivers.
func TestPlainAnswer(t *testing.T) {
	if size := unsafe.Sizeof(cstep{}); size > 128 {
		t.Errorf("a step takes %d bytes, more than two cache lines", size)
	}
	tests := []struct {
		name  string
		set   func(*StepBuilder)
		plain bool
	}{
		{"text", func(sb *StepBuilder) { sb.Text("hello") }, true},
		{"no text", func(sb *StepBuilder) {}, true},
		{"reasoning", func(sb *StepBuilder) { sb.Text("a").Reasoning("why") }, false},
		{"call", func(sb *StepBuilder) { sb.CallsFunction("f", map[string]any{}, "") }, false},
		{"finish", func(sb *StepBuilder) { sb.Text("a").Finish(wire.FinishLength) }, false},
		{"usage", func(sb *StepBuilder) { sb.Text("a").Usage(1, 2) }, false},
		{"id", func(sb *StepBuilder) { sb.Text("a").ID("resp-1") }, false},
		{"created", func(sb *StepBuilder) { sb.Text("a").Created(time.Unix(5, 0)) }, false},
		{"error", func(sb *StepBuilder) { sb.Error(ErrorAnswer{Status: 500, Message: "no"}) }, false},
		{"delay", func(sb *StepBuilder) { sb.Text("a").Delay(time.Millisecond) }, false},
		{"stream", func(sb *StepBuilder) { sb.Text("a").Stream(3, time.Millisecond) }, false},
		{"cut", func(sb *StepBuilder) { sb.Text("a").CutAfter(1) }, false},
		{"text from", func(sb *StepBuilder) { sb.TextFrom(TextFrom{Echo: true}) }, false},
		{"json", func(sb *StepBuilder) { sb.JSON(map[string]any{"a": 1}) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New("plain")
			tt.set(b.Step("s"))
			s, prog := compiled(t, b)
			st := &prog.steps[0]
			if (st.more == nil) != tt.plain {
				t.Fatalf("step keeps more: %v, want %v", st.more != nil, !tt.plain)
			}
			if st.text != s.Steps[0].Respond.Text {
				t.Errorf("text %q, want %q", st.text, s.Steps[0].Respond.Text)
			}
			if st.more != nil && !reflect.DeepEqual(st.more.answer, s.Steps[0].Respond) {
				t.Errorf("the step keeps %+v, want %+v", st.more.answer, s.Steps[0].Respond)
			}
		})
	}
	if !reflect.DeepEqual(noMore, stepMore{}) {
		t.Errorf("noMore, the rest of every plain answer, changed: %+v", noMore)
	}
}

// compiled builds b's scenario and compiles it, failing t on an error.
func compiled(t *testing.T, b *Builder) (*Scenario, *program) {
	t.Helper()
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	prog, errs := compile(s)
	if errs != nil {
		t.Fatal(errs)
	}
	return s, prog
}
