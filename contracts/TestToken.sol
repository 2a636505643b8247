// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title TestToken
/// @notice The demo's ERC-20 on the local chains ("Test Token", TKN, OpenZeppelin's default 18
/// decimals): something to send, approve and see decoded in the consent frame.
/// @dev `mint` is open to anyone on purpose: the demo's "Get test tokens" calls it on the dev chains.
/// This contract is for local development chains only and must never be deployed where tokens have value.
contract TestToken is ERC20 {
    constructor() ERC20("Test Token", "TKN") {}

    /// @notice Anyone may mint any amount to anyone: the dev chains' faucet for "Get test tokens".
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
