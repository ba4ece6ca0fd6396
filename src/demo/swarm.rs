pub fn run(_a: super::DemoArgs) -> i32 { todo!() }
