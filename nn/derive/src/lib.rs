//! The `#[derive(Module)]` procedural macro for the `nn` crate.
//!
//! Every field is listed, in declaration order, through `nn::Members`: parameters, buffers,
//! child modules, `Option`s and `Vec`s of them, and plain configuration values (which list
//! nothing). A field whose type implements none of these is a compile error naming the type;
//! mark it `#[module(skip)]`. Two fields are special: `training: bool` becomes the module's own
//! training flag, and a field of type `Hooks` holds its hooks.
//!
//! The generated code names the `nn` crate by the path the deriving crate knows it by: `::nn`
//! when its `Cargo.toml` lists `nn` (under whatever name, in any dependency table),
//! `::torch::nn` when it lists only the `torch` facade. A crate whose library depends on
//! `torch` but lists `nn` only as a dev-dependency therefore gets `::nn` and does not build:
//! depend on `nn` directly, or only on `torch`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, Type};

/// Derives `nn::Module` (and `nn::Members`, so the type can be a child of another module).
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The path of the `nn` crate from the crate being compiled (found in its `Cargo.toml`).
fn nn_root() -> proc_macro2::TokenStream {
    use proc_macro_crate::{crate_name, FoundCrate};
    let ident = |name: &str| syn::Ident::new(name, proc_macro2::Span::call_site());
    match (crate_name("nn"), crate_name("torch")) {
        // `nn` itself declares `extern crate self as nn`, so `::nn` works inside it too.
        (Ok(FoundCrate::Itself), _) | (Err(_), Err(_)) => quote! { ::nn },
        (Ok(FoundCrate::Name(n)), _) => {
            let n = ident(&n);
            quote! { ::#n }
        }
        (Err(_), Ok(FoundCrate::Itself)) => quote! { ::torch::nn },
        (Err(_), Ok(FoundCrate::Name(t))) => {
            let t = ident(&t);
            quote! { ::#t::nn }
        }
    }
}

fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn is_skipped(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    let mut skip = false;
    for a in attrs.iter().filter(|a| a.path().is_ident("module")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else {
                Err(m.error("unknown #[module] option (expected `skip`)"))
            }
        })?;
    }
    Ok(skip)
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let name = &input.ident;
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(name, "#[derive(Module)] supports structs only"));
    };
    let mut listed = Vec::new();
    let mut training = None;
    let mut hooks = None;
    let fields: Vec<(syn::Member, String, &syn::Field)> = match &data.fields {
        Fields::Named(f) => f
            .named
            .iter()
            .map(|f| {
                let id = f.ident.clone().expect("named field");
                (syn::Member::Named(id.clone()), id.to_string(), f)
            })
            .collect(),
        Fields::Unnamed(f) => {
            f.unnamed.iter().enumerate().map(|(i, f)| (syn::Member::Unnamed(i.into()), i.to_string(), f)).collect()
        }
        Fields::Unit => Vec::new(),
    };
    for (member, label, field) in fields {
        if is_skipped(&field.attrs)? {
            continue;
        }
        let seg = last_segment(&field.ty);
        if label == "training" && seg.as_deref() == Some("bool") {
            training = Some(member);
            continue;
        }
        if seg.as_deref() == Some("Hooks") {
            hooks = Some(member);
            continue;
        }
        if seg.as_deref() == Some("PhantomData") {
            continue;
        }
        listed.push((member, label));
    }
    let nn = nn_root();
    let visit = listed.iter().map(|(m, l)| quote! { #nn::Members::members(&self.#m, #l, f); });
    let visit_mut = listed.iter().map(|(m, l)| quote! { #nn::Members::members_mut(&mut self.#m, #l, f); });
    let training_impl = training.map(|m| {
        quote! {
            fn own_training(&self) -> ::core::option::Option<bool> { ::core::option::Option::Some(self.#m) }
            fn set_own_training(&mut self, on: bool) { self.#m = on; }
        }
    });
    let hooks_impl = hooks.map(|m| {
        quote! {
            fn hooks(&self) -> ::core::option::Option<&#nn::Hooks> { ::core::option::Option::Some(&self.#m) }
        }
    });
    let type_name = name.to_string();
    Ok(quote! {
        impl #impl_g #nn::Module for #name #ty_g #where_g {
            fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, #nn::Member<'a>)) {
                #(#visit)*
            }
            fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, #nn::MemberMut<'a>)) {
                #(#visit_mut)*
            }
            fn type_name(&self) -> &'static str { #type_name }
            #training_impl
            #hooks_impl
        }
        impl #impl_g #nn::Members for #name #ty_g #where_g {
            fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, #nn::Member<'a>)) {
                f(name, #nn::Member::Module(self))
            }
            fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, #nn::MemberMut<'a>)) {
                f(name, #nn::MemberMut::Module(self))
            }
        }
    })
}
