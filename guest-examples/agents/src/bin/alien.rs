//! Imports an interface sbx-wasm does not provide: the host must refuse to
//! start it and name the import.

wit_bindgen::generate!({
    inline: "package alien:host@0.1.0;
             interface launch { fire: func(target: string); }
             world alien { import launch; }",
});

fn main() {
    alien::host::launch::fire("everything");
}
