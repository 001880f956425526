#pragma once
// HookFn: the callable a Function pre or post hook is stored as (Note [Hook
// callables]).

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace hookscope {

// Note [Hook callables]
// ~~~~~~~~~~~~~~~~~~~~~
// A std::function does not say whether the callable it holds needs a
// destructor, so removing a hook stored as one must always reach into the
// callable's storage and call its manager. HookFn is a move-only
// std::function that keeps that fact: a callable of up to kInlineBytes
// (pointer-aligned, nothrow movable) lives inside the HookFn, a larger one
// on the heap, and trivially_destructible() is true when destroying it is a
// no-op (a lambda capturing pointers and integers, as DDP's Reducer hook
// does). HookList records that bit in the hook's slot, so removing such a
// hook never touches the callable (Note [Hook list storage]). A HookFn made
// from a std::function wraps it (not trivially destructible unless empty).
template <class Sig>
class HookFn;

template <class R, class... Args>
class HookFn<R(Args...)> {
 public:
  static constexpr size_t kInlineBytes = 3 * sizeof(void*);

  HookFn() noexcept = default;
  HookFn(std::nullptr_t) noexcept {}  // NOLINT: as std::function

  template <class F, class D = std::decay_t<F>>
    requires(!std::is_same_v<D, HookFn> && !std::is_same_v<D, std::nullptr_t> &&
             std::is_invocable_r_v<R, D&, Args...>)
  HookFn(F&& f) {  // NOLINT: implicit, as std::function
    if constexpr (std::is_same_v<D, std::function<R(Args...)>>) {
      if (!f) return;  // an empty std::function makes an empty HookFn
    }
    if constexpr (kStoredInline<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      invoke_ = &invoke_inline<D>;
      // A callable that neither needs a destructor nor a move constructor
      // has no ops: its bytes are all there is to it.
      if constexpr (!std::is_trivially_destructible_v<D> || !std::is_trivially_copyable_v<D>) {
        ops_ = &kInlineOps<D>;
      }
    } else {
      ::new (static_cast<void*>(buf_)) D*(new D(std::forward<F>(f)));
      invoke_ = &invoke_heap<D>;
      ops_ = &kHeapOps<D>;
    }
  }

  HookFn(HookFn&& other) noexcept { take(other); }
  HookFn& operator=(HookFn&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  HookFn& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  HookFn(const HookFn&) = delete;
  HookFn& operator=(const HookFn&) = delete;
  ~HookFn() { reset(); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }
  R operator()(Args... args) const {
    if (!invoke_) throw std::bad_function_call();
    return invoke_(const_cast<unsigned char*>(buf_), std::forward<Args>(args)...);
  }
  // Destroying the callable does nothing (true for an empty HookFn).
  bool trivially_destructible() const noexcept { return !ops_ || !ops_->destroy; }

  void reset() noexcept {
    if (ops_ && ops_->destroy) ops_->destroy(buf_);
    invoke_ = nullptr;
    ops_ = nullptr;
  }

 private:
  using Invoke = R (*)(void* buf, Args&&... args);
  struct Ops {
    void (*destroy)(void* buf);          // null: nothing to do
    void (*move)(void* to, void* from);  // null: copy the bytes
  };

  template <class D>
  static constexpr bool kStoredInline =
      sizeof(D) <= kInlineBytes && alignof(D) <= alignof(void*) &&
      std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static R invoke_inline(void* buf, Args&&... args) {
    return std::invoke(*static_cast<D*>(buf), std::forward<Args>(args)...);
  }
  template <class D>
  static R invoke_heap(void* buf, Args&&... args) {
    return std::invoke(**static_cast<D**>(buf), std::forward<Args>(args)...);
  }
  template <class D>
  static constexpr Ops kInlineOps = {
      std::is_trivially_destructible_v<D>
          ? nullptr
          : +[](void* buf) { static_cast<D*>(buf)->~D(); },
      std::is_trivially_copyable_v<D>
          ? nullptr
          : +[](void* to, void* from) {
              ::new (to) D(std::move(*static_cast<D*>(from)));
              static_cast<D*>(from)->~D();
            },
  };
  template <class D>
  static constexpr Ops kHeapOps = {
      [](void* buf) { delete *static_cast<D**>(buf); },
      nullptr,  // the pointer moves by copying its bytes
  };

  void take(HookFn& other) noexcept {
    invoke_ = other.invoke_;
    ops_ = other.ops_;
    if (!invoke_) return;
    if (ops_ && ops_->move) {
      ops_->move(buf_, other.buf_);
    } else {
      std::memcpy(buf_, other.buf_, kInlineBytes);
    }
    other.invoke_ = nullptr;
    other.ops_ = nullptr;
  }

  Invoke invoke_ = nullptr;   // null: empty
  const Ops* ops_ = nullptr;  // null: nothing to destroy, moved by copying the bytes
  alignas(void*) unsigned char buf_[kInlineBytes];
};

// Whether removing a hook may skip destroying `fn` (Note [Hook callables]):
// only a HookFn knows; any other callable type is destroyed on removal.
template <class Fn>
bool hook_fn_trivially_destructible(const Fn& fn) {
  if constexpr (requires { fn.trivially_destructible(); }) {
    return fn.trivially_destructible();
  } else {
    return false;
  }
}

}  // namespace hookscope
