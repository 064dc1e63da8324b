// Templates whose signatures hold expressions: SFINAE (enable_if), decltype
// return types, sizeof / alignof / noexcept, casts, calls, member access,
// new / delete / throw, folds, braced initializers, pack expansions, and
// the standard library's own (chrono, functional, variant, tuple, memory).
// demangle_corpus.py compiles it (g++ -c, no link) and judges our names of
// its symbols against c++filt's.  Never run.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>
#include <optional>
#include <algorithm>
#include <numeric>
#include <array>
#include <immintrin.h>
#include <experimental/simd>

struct Point { int x; int y; int get() const { return x; } static int s; };
int Point::s = 0;
template <int N> struct Int {};
template <class T> struct Box { T v; template <class U> U as() const { return U(v); } };

template <class T, class U> auto add(T a, U b) -> decltype(a + b) { return a + b; }
template <class T, class U> auto sub(T a, U b) -> decltype(a - b * a) { return a - b * a; }
template <class T> auto neg(T a) -> decltype(-a) { return -a; }
template <class T> auto notb(T a) -> decltype(!a) { return !a; }
template <class T> auto cmpl(T a) -> decltype(~a) { return ~a; }
template <class T> auto deref(T p) -> decltype(*p) { return *p; }
template <class T> auto addr(T &p) -> decltype(&p) { return &p; }
template <class T> auto member(T p) -> decltype(p.x) { return p.x; }
template <class T> auto arrow(T p) -> decltype(p->y) { return p->y; }
template <class T> auto call0(T f) -> decltype(f()) { return f(); }
template <class T, class A> auto call1(T f, A a) -> decltype(f(a, a)) { return f(a, a); }
template <class T> auto mcall(T p) -> decltype(p.get()) { return p.get(); }
template <class T> auto idx(T p) -> decltype(p[0]) { return p[0]; }
template <class T> auto cond(T a) -> decltype(a ? a : a) { return a ? a : a; }
template <class T> auto cast1(T a) -> decltype(static_cast<long>(a)) { return static_cast<long>(a); }
template <class T> auto cast2(T a) -> decltype((long)a) { return (long)a; }
template <class T> auto cast3(T a) -> decltype(reinterpret_cast<const char *>(a)) { return reinterpret_cast<const char *>(a); }
template <class T> auto cast4(T a) -> decltype(const_cast<const T &>(a)) { return const_cast<const T &>(a); }
template <class T> auto ctor0() -> decltype(T()) { return T(); }
template <class T> auto ctor2(int a) -> decltype(T(a, a)) { return T(a, a); }
template <class T> auto brace(int a) -> decltype(T{a, a}) { return T{a, a}; }
template <class T> auto sz(T a) -> Int<sizeof(a)> { return {}; }
template <class T> auto szt(T) -> Int<sizeof(T)> { return {}; }
template <class T> auto alt(T) -> Int<alignof(T)> { return {}; }
template <class T> auto nx(T a) -> Int<sizeof(a.get()) + 1> { return {}; }
template <class T> auto pre(T a) -> decltype(++a) { return ++a; }
template <class T> auto post(T a) -> decltype(a--) { return a--; }
template <class T> auto comma(T a) -> decltype(a, a) { return a; }
template <class T> auto asg(T a) -> decltype(a += 1) { return a += 1; }
template <class T> auto shl(T a) -> decltype(a << 2) { return a << 2; }
template <class T> auto gtr(T a) -> Int<(sizeof(T) > 2)> { return {}; }
template <class T> auto lss(T a) -> Int<(sizeof(T) < 2)> { return {}; }
template <class T> auto nw(T a) -> decltype(new T(a)) { return new T(a); }
template <class T> auto nwa(int n) -> decltype(new T[4]) { return new T[n]; }
template <class T> auto gnw(T a) -> decltype(::new T) { return ::new T; }
template <class T> auto del(T *p) -> decltype(delete p) { delete p; }
template <class T> auto dela(T *p) -> decltype(delete[] p) { delete[] p; }
template <class T> auto thr(T a) -> decltype(throw a) { throw a; }
template <class T> auto scope(T) -> decltype(T::s) { return T::s; }
template <class T> auto thisy(T *p) -> decltype(p->template as<int>()) { return p->template as<int>(); }
template <class... T> auto szp(T... a) -> Int<sizeof...(T)> { return {}; }
template <class... T> auto szp2(T... a) -> Int<sizeof...(a)> { return {}; }
template <class... T> auto fold1(T... a) -> decltype((a + ...)) { return (a + ...); }
template <class... T> auto fold2(T... a) -> decltype((... * a)) { return (... * a); }
template <class... T> auto fold3(T... a) -> decltype((1 + ... + a)) { return (1 + ... + a); }
template <class... T> auto fold4(T... a) -> decltype((a - ... - 1)) { return (a - ... - 1); }
template <class... T> auto packcall(T... a) -> decltype(add(a...)) { return add(a...); }
template <class... T> auto packtup(T... a) -> decltype(std::make_tuple(a...)) { return std::make_tuple(a...); }
template <class F, class... T> auto inv(F f, T... a) -> decltype(f(a...)) { return f(a...); }
template <class T> auto dv(T a) -> decltype(std::declval<T>().get()) { return a.get(); }
template <class T> typename std::enable_if<std::is_integral<T>::value, T>::type en(T a) { return a; }
template <class T> std::enable_if_t<(sizeof(T) > 1), int> en2(T) { return 0; }
template <class T, std::enable_if_t<std::is_floating_point<T>::value, int> = 0> T en3(T a) { return a; }
template <class T> auto pm(T p, int Point::*m) -> decltype(p.*m) { return p.*m; }
template <class T> auto pmp(T p, int Point::*m) -> decltype(p->*m) { return p->*m; }
template <class T> auto lit(T a) -> decltype(a * 2u + 3l - 'c' + true) { return a * 2u + 3l - 'c' + true; }
template <class T> auto nul(T a) -> decltype(a == nullptr) { return a == nullptr; }
template <class T> auto ptrlit(T a) -> Int<sizeof(a) + 1> { return {}; }
int gfun(int);
template <int (*F)(int)> struct FP {};
template <int (*F)(int)> int usefp(FP<F>) { return 0; }
template <class T> auto tpl(T a) -> decltype(std::get<0>(a)) { return std::get<0>(a); }

template <class T> auto dyn(T *a) -> decltype(dynamic_cast<Point *>(a)) { return dynamic_cast<Point *>(a); }
template <class T> auto ilist(T a) -> decltype(std::vector<T>{a, a}) { return std::vector<T>{a, a}; }
template <class T> auto dtor(T *p) -> decltype(p->~T()) { p->~T(); }
template <class T> auto opname(T a) -> decltype(operator+(a, a)) { return operator+(a, a); }
template <class T> auto mptr() -> decltype(&T::x) { return &T::x; }
template <class T> auto mfptr() -> decltype(&T::get) { return &T::get; }
template <class T, int N> auto arr(T (&a)[N]) -> Int<N * 2> { return {}; }
template <int N> auto cnd() -> Int<(N > 1 ? N : 1)> { return {}; }
template <int N> auto un() -> Int<-N> { return {}; }
template <int N> auto sh() -> Int<(N >> 1)> { return {}; }
template <class T> auto aw(T a) -> decltype(a.T::get()) { return a.T::get(); }

struct S { S operator+(S) const { return *this; } int get() const { return 1; } S() = default; S(int, int) {} };
S operator+(S a, S) { return a; }
int gfun(int a) { return a; }

// GCC vector types (Dv <n> _ <type>, Dv _ <expression> _ <type>): x86
// intrinsic types, vector_size attributes, vectors under pointers,
// references and cv, as template arguments, and std::experimental::simd.
typedef float v4f __attribute__((vector_size(16)));
typedef int v8i __attribute__((vector_size(32)));
typedef unsigned char v16u8 __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
__m128 vadd(__m128 a, __m128 b) { return a; }
__m256i vload(const __m256i *p) { return *p; }
__m128d vdbl(__m128d a, const __m128d &b, __m128i c) { return a; }
__m512 vwide(__m512 a) { return a; }
v4f vscale(v4f a, float s, v4f *out) { return a; }
void vints(v8i &a, const v8i &b, v16u8 c, v2d d) {}
void vptrs(float *__attribute__((vector_size(32))) p) {}
void varr(v4f (&a)[4], v4f (*fn)(v4f)) {}
template <class V> V vid(V v) { return v; }
template <class V> struct VBox { V v; V get() const { return v; } };
template <int N> void vdep(float __attribute__((vector_size(N * sizeof(float)))) v) {}
template <int N> auto vdep2(float x) -> decltype((float __attribute__((vector_size(N * 4)))){} + x) { return x; }
template <class T, int N> void vtn(T __attribute__((vector_size(N * sizeof(T)))) v) {}
namespace stdx = std::experimental;
template <class T> T vsum(const stdx::native_simd<T> &v) { return stdx::reduce(v); }
template <class T, class A> void vsimd(stdx::simd<T, A> &v) { v += 1; }

void use_vectors() {
  __m128 a{}; vadd(a, a); __m256i b{}; vload(&b); __m128d d{}; __m128i i{}; vdbl(d, d, i);
  __m512 w{}; vwide(w); v4f f{}; vscale(f, 1.0f, &f); v8i e{}; vints(e, e, v16u8{}, v2d{});
  vptrs({}); v4f arr4[4]; varr(arr4, vid<v4f>); vid(a); vid(b); vid(w);
  VBox<__m128> bx{}; bx.get(); VBox<const v8i *> bp{}; bp.get(); VBox<std::array<v4f, 2>> ba{}; ba.get();
  std::vector<__m256i> vv; vv.push_back(b); std::vector<v4f> vf(2); vf.resize(3);
  vdep<4>(f); vdep2<4>(1.0f); vtn<float, 4>(f); vtn<int, 8>(e);
  stdx::native_simd<float> sf = 1.0f; vsum(sf); vsimd(sf); stdx::native_simd<int> si = 1; vsum(si); vsimd(si);
}

void use() {
  Point pt{1, 2}; Point *pp = &pt; int x = 1; int arrx[3] = {1, 2, 3};
  add(1, 2.0); sub(1, 2); neg(1); notb(1); cmpl(1); deref(pp); addr(x); member(pt); arrow(pp);
  call0([] { return 1; }); call1(add<int, int>, 1); mcall(pt); idx(pp); cond(1); cast1(1); cast2(1);
  cast3(pp); cast4(1); ctor0<int>(); ctor2<S>(1); brace<S>(1); sz(1); szt(1); alt(1.0); nx(pt);
  pre(1); post(1); comma(1); asg(1); shl(1); gtr(1); lss(1); delete nw(1); delete[] nwa<int>(2);
  delete gnw(1); del(new int); dela(new int[2]); try { thr(1); } catch (...) {}
  scope(pt); Box<int> b{1}; thisy(&b); szp(1, 2.0); szp2(1, 'c', 2); fold1(1, 2); fold2(1, 2.0); fold3(1, 2);
  fold4(1, 2); packcall(1, 2); packtup(1, 'c'); inv(gfun, 1); dv(pt); en(1); en2(1); en3(1.0);
  pm(pt, &Point::x); pmp(pp, &Point::y); lit(1); nul(pp); ptrlit(1); usefp(FP<gfun>{});
  tpl(std::make_tuple(1)); dyn(pp); ilist(1); dtor(pp); opname(S{}); mptr<Point>(); mfptr<Point>();
  arr(arrx); cnd<3>(); un<3>(); sh<4>(); aw(pt);
  std::chrono::duration<double> d = std::chrono::duration_cast<std::chrono::duration<double>>(std::chrono::nanoseconds(5));
  (void)d;
  std::function<int(int)> f = gfun; f(1);
  std::variant<int, double> v = 1.0; std::visit([](auto a) { return (int)a; }, v);
  auto up = std::make_unique<Point>(); auto sp = std::make_shared<Point>();
  std::map<std::string, int> m; m.emplace("a", 1);
  std::vector<std::pair<int, std::string>> vec; vec.emplace_back(1, "x"); std::sort(vec.begin(), vec.end());
  std::optional<std::string> o = "x"; (void)o.value_or("y");
  std::tuple<int, double, std::string> t{1, 2.0, "c"}; std::apply([](auto... a) { return sizeof...(a); }, t);
  std::invoke(gfun, 1); std::bind(gfun, 1)(); use_vectors();
  std::vector<int> iv{1, 2}; (void)std::accumulate(iv.begin(), iv.end(), 0);
}
int main() { use(); return 0; }
