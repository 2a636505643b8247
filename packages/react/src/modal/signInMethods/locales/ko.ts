import type { LinkingMessages } from '../en.js'

const ko: LinkingMessages = {
  signInMethods: '로그인 방법',
  loadingMethods: '로그인 방법을 불러오는 중…',
  signInToManage: '로그인 방법을 보고 변경하려면 앱에 로그인하세요.',
  kindEmail: '이메일',
  kindPasskey: '패스키',
  kindWallet: '지갑',
  kindOAuth: '소셜 계정',
  linkedOn: '{date}에 연결됨',
  remove: '삭제',
  removeMethod: '{label} 삭제',
  onlyMethod: '유일한 로그인 방법입니다. 삭제하기 전에 다른 방법을 추가하세요.',
  addMethod: '로그인 방법 추가',
  emailToLink: '추가할 이메일 주소',
  sendCode: '코드 보내기',
  typeCodeInFrame: '{email}(으)로 보낸 코드를 대화 상자에 입력하세요.',
  signInWalletToLink: '{name}에서 메시지에 서명하세요',
  linking: '연결하는 중…',
  methodLinked: '{label}이(가) 연결되었습니다. 이제 이것으로 로그인할 수 있습니다.',
  removing: '삭제하는 중…',
  methodRemoved: '{label}이(가) 삭제되었습니다.',
  secondFactor: '2단계 인증',
  mfaOff: '설정된 2단계 인증이 없습니다.',
  mfaOn: '인증 앱이 설정되어 있습니다.',
  setUpTotp: '인증 앱 설정',
  settingUpTotp: '인증 앱을 설정하는 중…',
  totpEnrolled: '인증 앱이 설정되었습니다. 복구 코드를 안전한 곳에 보관하세요.',
  methodsStatus: '로그인 방법 상태',
}

export default ko
