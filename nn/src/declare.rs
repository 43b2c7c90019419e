//! `nn::module!`: a module's fields, their types and how each is built, declared in one place.

/// Declares a module struct together with its constructor: each field says how it is built,
/// and `new` builds the fields in declaration order, which is the order PyTorch's `__init__`
/// registers them in (so the random initialisation draws the same numbers in the same order).
/// The struct derives [`Module`](crate::Module); `?` works in the field expressions, and the
/// constructor's own arguments, if any, follow the struct's name.
///
/// A field is `name = Type::function(args)?` (or without the `?`; `Type` may be a path such as
/// `nn::Linear`), whose type is `Type`, as in PyTorch's `self.name = Type(args)`; or
/// `name: Type = expression` for anything else.
///
/// ```
/// use nn::{Conv2d, Linear, Module};
///
/// nn::module! {
///     /// Two convolutions and a classifier.
///     pub struct Net(classes: i64) {
///         conv1 = Conv2d::new(1, 8, 3)?,
///         conv2 = Conv2d::new(8, 16, 3)?,
///         dropout = nn::Dropout::new(0.25)?,
///         fc = Linear::new(16 * 24 * 24, classes)?,
///         #[module(skip)]
///         classes: i64 = classes,
///     }
/// }
///
/// let net = Net::new(10).unwrap();
/// let keys: Vec<String> = net.state_dict().keys().map(|k| k.to_string()).collect();
/// assert_eq!(keys, ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"]);
/// assert_eq!((net.fc.weight.sizes(), net.classes), (&[10, 9216][..], 10));
/// // A bad argument is an error from `new`, not a panic.
/// assert!(Net::new(-1).is_err());
/// ```
///
/// It expands to the struct (with `#[derive(Module)]`, the attributes given, and each field's
/// attributes such as `#[module(skip)]`) and `impl Net { fn new(classes: i64) -> Result<Net> }`
/// with the struct's visibility. Each field is one step of the macro's expansion (a longer path
/// than `module::Type` a few more), so a module of more than about a hundred fields needs a
/// larger `#![recursion_limit]`. A generic module, or one whose
/// constructor does more than build its fields, is written out by hand: the struct with
/// `#[derive(Module)]` and its own `new`.
#[macro_export]
macro_rules! module {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident $( ( $($arg:ident : $arg_ty:ty),* $(,)? ) )? { $($fields:tt)* }
    ) => {
        $crate::module!(@fields [$(#[$attr])*] [$vis] $name [$( $($arg: $arg_ty),* )?] [] $($fields)*);
    };
    // `name: Type = expression`
    (@fields $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*]
        $(#[$fa:meta])* $fv:vis $field:ident : $ty:ty = $init:expr $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {[$(#[$fa])*] [$fv] $field [$ty] [$init]}] $($($rest)*)?);
    };
    // `name = Type::function(args)` and `name = module::Type::function(args)`, with or without
    // `?`, in one step each (so a module of many fields stays far from the recursion limit).
    (@fields $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*]
        $(#[$fa:meta])* $fv:vis $field:ident = $ty:ident :: $f:ident ( $($a:tt)* ) ? $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {[$(#[$fa])*] [$fv] $field [$ty] [$ty::$f($($a)*)?]}] $($($rest)*)?);
    };
    (@fields $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*]
        $(#[$fa:meta])* $fv:vis $field:ident = $ty:ident :: $f:ident ( $($a:tt)* ) $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {[$(#[$fa])*] [$fv] $field [$ty] [$ty::$f($($a)*)]}] $($($rest)*)?);
    };
    (@fields $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*]
        $(#[$fa:meta])* $fv:vis $field:ident = $m:ident :: $ty:ident :: $f:ident ( $($a:tt)* ) ? $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {[$(#[$fa])*] [$fv] $field [$m::$ty] [$m::$ty::$f($($a)*)?]}] $($($rest)*)?);
    };
    (@fields $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*]
        $(#[$fa:meta])* $fv:vis $field:ident = $m:ident :: $ty:ident :: $f:ident ( $($a:tt)* ) $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {[$(#[$fa])*] [$fv] $field [$m::$ty] [$m::$ty::$f($($a)*)]}] $($($rest)*)?);
    };
    // `name = path::to::Type::function(args)`, with or without `?`: the path is gathered one
    // segment at a time, and the segment before the call is the field's type.
    (@fields $head:tt $vis:tt $name:ident $args:tt $done:tt
        $(#[$fa:meta])* $fv:vis $field:ident = $($rest:tt)*
    ) => {
        $crate::module!(@ctor $head $vis $name $args $done [$(#[$fa])*] [$fv] $field [] $($rest)*);
    };
    (@ctor $head:tt $vis:tt $name:ident $args:tt $done:tt $fa:tt $fv:tt $field:ident [$($seg:ident)*]
        $next:ident :: $($rest:tt)*
    ) => {
        $crate::module!(@ctor $head $vis $name $args $done $fa $fv $field [$($seg)* $next] $($rest)*);
    };
    (@ctor $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*] $fa:tt $fv:tt $field:ident [$($seg:ident)+]
        $f:ident ( $($a:tt)* ) ? $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {$fa $fv $field [$($seg)::+] [$($seg)::+ :: $f($($a)*)?]}] $($($rest)*)?);
    };
    (@ctor $head:tt $vis:tt $name:ident $args:tt [$($done:tt)*] $fa:tt $fv:tt $field:ident [$($seg:ident)+]
        $f:ident ( $($a:tt)* ) $(, $($rest:tt)*)?
    ) => {
        $crate::module!(@fields $head $vis $name $args
            [$($done)* {$fa $fv $field [$($seg)::+] [$($seg)::+ :: $f($($a)*)]}] $($($rest)*)?);
    };
    (@fields [$($attr:tt)*] [$vis:vis] $name:ident [$($args:tt)*]
        [$( {[$($fa:tt)*] [$fv:vis] $field:ident [$ty:ty] [$init:expr]} )*]
    ) => {
        $($attr)*
        #[derive($crate::Module)]
        $vis struct $name {
            $( $($fa)* $fv $field: $ty, )*
        }

        impl $name {
            /// Builds the module's members in declaration order (generated by `nn::module!`).
            #[allow(clippy::too_many_arguments)]
            $vis fn new($($args)*) -> $crate::__private::Result<$name> {
                ::core::result::Result::Ok($name { $( $field: $init, )* })
            }
        }
    };
}

#[doc(hidden)]
pub mod __private {
    pub use c10::Result;
}
