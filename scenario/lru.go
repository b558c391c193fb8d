package scenario

import (
	"container/list"
	"sync"
)

// lru is a map bounded to max entries that forgets the least recently used
// one past it. It is safe for concurrent use.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element // of *lruItem[V]
	order *list.List               // most recently used first
}

type lruItem[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, items: map[string]*list.Element{}, order: list.New()}
}

// get returns the value at key, marking it used.
func (l *lru[V]) get(key string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		l.order.MoveToFront(el)
		return el.Value.(*lruItem[V]).val, true
	}
	var zero V
	return zero, false
}

// put sets the value at key.
func (l *lru[V]) put(key string, v V) {
	l.update(key, func(V) V { return v })
}

// getOrAdd returns the value at key, adding mk() there first when there is
// none.
func (l *lru[V]) getOrAdd(key string, mk func() V) V {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		l.order.MoveToFront(el)
		return el.Value.(*lruItem[V]).val
	}
	v := mk()
	l.add(key, v)
	return v
}

// update sets the value at key to fn of the value there (the zero value for
// none).
func (l *lru[V]) update(key string, fn func(old V) V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		it := el.Value.(*lruItem[V])
		it.val = fn(it.val)
		l.order.MoveToFront(el)
		return
	}
	var zero V
	l.add(key, fn(zero))
}

// add adds a new key, forgetting the least recently used past max. l is
// locked.
func (l *lru[V]) add(key string, v V) {
	l.items[key] = l.order.PushFront(&lruItem[V]{key: key, val: v})
	if l.order.Len() > l.max {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.items, oldest.Value.(*lruItem[V]).key)
	}
}

// len returns the number of entries.
func (l *lru[V]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}
