//! `sbx-wasm mcp --data`: `run_python_data`, Python in the data runner,
//! through the official Rust SDK's client: pandas on the granted folders,
//! a refused write beside an allowed one, nothing else changed.

use super::Fixture;
use super::rust_client::{Client, call, field};
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use sbx_wasm_tests::{data_runner, sbx_bin};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn run_python_data_runs_pandas_under_the_grant() {
    crate::python_data::ready();
    let f = Fixture::new();
    let before = f.host_state();
    // The data runner from the user's cache folder, where it was compiled.
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&["--data"]))
            .env("SBX_WASM_DATA_RUNNER", data_runner());
    });
    let s = Client::default()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let tools = s.list_all_tools().await.unwrap();
    let listed = tools.iter().find(|t| t.name == "run_python_data").unwrap();
    assert!(
        listed
            .description
            .as_deref()
            .unwrap_or("")
            .contains("pandas"),
        "{listed:?}"
    );
    let code = "import pandas as pd\n\
                df = pd.read_csv('/work/data.csv')\n\
                print(int(df.value.sum()))\n\
                df.to_csv('/work/out/copy.csv', index=False)\n\
                try:\n\
                \x20   open('/work/data.csv', 'w')\n\
                except PermissionError as e:\n\
                \x20   print('refused', type(e).__name__)\n";
    let r = call(&s, "run_python_data", json!({ "code": code })).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(field(&r, "stdout"), "5\nrefused PermissionError\n");
    let denials = field(&r, "denials").as_array().unwrap();
    assert_eq!(denials.len(), 1, "{denials:?}");
    assert_eq!(denials[0]["violation"], "fs_write_denied");
    assert_eq!(
        std::fs::read_to_string(f.path("out/copy.csv")).unwrap(),
        "name,value\na,2\nb,3\n"
    );
    s.cancel().await.unwrap();
    // The input and the canary as they were.
    assert_eq!(f.host_state(), before);

    // Without --data the tool is not offered.
    let plain = super::rust_client::stdio(&f, &[], Client::default()).await;
    let names: Vec<String> = plain
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.contains(&"run_python_data".to_string()), "{names:?}");
    plain.cancel().await.unwrap();
}
